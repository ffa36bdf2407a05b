"""How each residency of an `offload` plan comes in and leaves (README.md, "Plan"),
vectorized: a tensor's off-device copy is the one the last residency before it that
copied out made (or the copy it starts with); it is current when no residency
produced or wrote the tensor since. Broken rules raise RuleError for the first
residency (plan order) that breaks one, naming it as a walk in order would."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from judge.types.offload.case import DEVICE, HOST, NVME, OffloadCase
from judge.types.offload.plan import (
    COPIED,
    NO_OUT,
    NO_STEP,
    OUT_COMPRESSED,
    OUT_COPY,
    OUT_DROP,
    OUT_NVME,
    PRODUCED,
    RECOMPUTED,
    OffloadPlan,
)  # fmt: skip

FINAL_OUT = 4  # the last residency is copied out to the host (its tensor ends there)


class RuleError(Exception):
    """A plan breaks a rule; the message names the residency."""


@dataclass(frozen=True)
class Ways:
    at: np.ndarray  # the step its decode / recompute runs before (NO_STEP: none)
    out: np.ndarray  # OUT_* code, FINAL_OUT, or NO_OUT
    compressed_in: np.ndarray  # bool
    from_nvme: np.ndarray  # bool
    reads: np.ndarray  # the residency whose copy-out made what it copies in; -1: none
    host_windows: np.ndarray  # int64 [k, 4]: (first point, last point, bytes, tensor)


def _last_before(mask: np.ndarray, group_start: np.ndarray, inclusive: bool) -> np.ndarray:
    """For each row, the last row of its group (up to it, or before it) where mask holds;
    -1 when none."""
    idx = np.where(mask, np.arange(len(mask)), -1)
    best = np.maximum.accumulate(idx) if len(idx) else idx
    if not inclusive:
        best = np.concatenate([[-1], best[:-1]])
    return np.where(best >= group_start, best, -1)


def ways_in_and_out(
    case: OffloadCase, plan: OffloadPlan, first_idx: np.ndarray, first: np.ndarray,
    last: np.ndarray, final: np.ndarray, mode: np.ndarray, at: np.ndarray,
) -> Ways:  # fmt: skip
    n = len(plan)
    rows = np.arange(n)
    t = plan.tensor
    group = np.searchsorted(t, t, side="left")  # each tensor's first row
    same = rows > group
    prev_last = np.where(same, np.roll(last, 1), -1)
    start, end = case.start_tier()[t], case.end_tier()[t]
    given = plan.out if plan.out is not None else np.full(n, NO_OUT)
    out = np.where(final, NO_OUT, np.where(given == NO_OUT, OUT_COPY, given))
    maker = ~final & ((out == OUT_COPY) | (out == OUT_COMPRESSED) | (out == OUT_NVME))
    # the copy each residency finds when it comes in: its maker, or the starting copy
    writer = _last_before(maker, group, inclusive=False)
    w = np.maximum(writer, 0)
    tier = np.where(writer >= 0, np.where(out[w] == OUT_NVME, NVME, HOST), start)
    small = (writer >= 0) & (out[w] == OUT_COMPRESSED)
    # current at the end of each residency: made after the last production or write
    wc = np.concatenate([[0], np.cumsum(case.writes_mask())])
    dirty = (wc[first_idx + plan.count] - wc[first_idx] > 0) | (mode == PRODUCED)
    last_dirty = _last_before(dirty, group, inclusive=True)
    copy_pos = np.where(
        writer >= 0, 2 * writer + 1, np.where(start != DEVICE, 2 * group - 1, -(2**62))
    )
    current = (copy_pos > -(2**62)) & (
        copy_pos > np.where(last_dirty >= 0, 2 * last_dirty, -(2**62) - 1)
    )
    copied = mode == COPIED
    compressed_in = copied & small
    steps_at = np.where(compressed_in & (at == NO_STEP), first, at)
    next_recomputed = np.append(mode[1:] == RECOMPUTED, False)
    final_out = final & (end == HOST) & ~(current & (tier == HOST) & ~small)
    out = np.where(final_out, FINAL_OUT, out)
    _first_broken(case, plan, locals())
    return Ways(
        at=steps_at,
        out=out,
        compressed_in=compressed_in,
        from_nvme=copied & (tier == NVME),
        reads=np.where(copied, writer, -1),
        host_windows=_host_windows(case, plan, first, last, final, out, writer, copied,
                                   current & (end == HOST) & final & ~final_out, tier, start),
    )  # fmt: skip


def _host_windows(
    case: OffloadCase, plan: OffloadPlan, first: np.ndarray, last: np.ndarray,
    final: np.ndarray, out: np.ndarray, writer: np.ndarray, copied: np.ndarray,
    kept_on_host: np.ndarray, tier: np.ndarray, start: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """Host copies: made by a copy-out to the host (or there from the start), held until
    the first use of the last residency copied in from them, or to the end."""
    n, t = len(plan), plan.tensor
    end_point = 2 * len(case.steps) - 1
    size = case.size[t]
    small = case.csize[t] if case.csize is not None else size
    # slot n + i: tensor i's starting copy
    until = np.full(n + len(case), -(2**62), dtype=np.int64)
    made = np.concatenate([2 * last + 1, np.full(len(case), -1)])
    slot = np.where(writer >= 0, writer, n + t)
    readers = copied & (tier == HOST)
    np.maximum.at(until, slot[readers], 2 * first[readers] - 1)
    np.maximum.at(until, slot[kept_on_host], end_point)
    host_out = ~final & ((out == OUT_COPY) | (out == OUT_COMPRESSED))
    keep = np.concatenate([host_out, case.start_tier() == HOST])
    nbytes = np.concatenate([np.where(out == OUT_COMPRESSED, small, size), case.size])
    owner = np.concatenate([t, np.arange(len(case))])
    finals = np.flatnonzero(out == FINAL_OUT)
    to_end = np.full(len(finals), end_point)
    table = np.concatenate([
        np.stack([made, np.maximum(made, until), nbytes, owner], axis=1)[keep],
        np.stack([2 * last[finals] + 1, to_end, size[finals], t[finals]], axis=1),
    ]).astype(np.int64)  # fmt: skip
    return table[np.lexsort((table[:, 0], table[:, 3]))]


def _first_broken(case: OffloadCase, plan: OffloadPlan, v: dict) -> None:  # type: ignore[type-arg]
    """Raise RuleError for the first residency that breaks a rule about ways in and out."""
    mode, copied, first, p, at, x = (
        v["mode"],
        v["copied"],
        v["first"],
        plan.prefetch,
        v["at"],
        v["steps_at"],
    )
    recomputable = (
        (case.recompute_cost[plan.tensor] >= 0)
        if case.recompute_cost is not None
        else np.zeros(len(plan), bool)
    )
    csize = case.csize[plan.tensor] if case.csize is not None else np.zeros(len(plan), np.int64)
    leaves = ~v["final"]
    checks = [  # in the order a walk would meet them at one residency
        (copied & v["same"] & (p < v["prev_last"]), "early"),
        (copied & (p >= first), "late"),
        (v["compressed_in"] & ~((p < x) & (x <= first)), "decode range"),
        (copied & ~v["compressed_in"] & (at != NO_STEP), "decode on full"),
        ((mode == RECOMPUTED) & ~recomputable, "not recomputable"),
        ((mode == RECOMPUTED) & ~((v["prev_last"] < at) & (at <= first)), "recompute range"),
        (v["final"] & (v["given"] != NO_OUT), "out on last"),
        (leaves & (v["out"] == OUT_DROP) & ~v["current"] & ~v["next_recomputed"], "dirty drop"),
        (leaves & (v["out"] == OUT_COMPRESSED) & (csize == 0), "not compressible"),
        (leaves & (v["out"] == OUT_NVME) & (case.nvme is None), "no nvme"),
    ]
    hits = [(int(np.argmax(mask)), k) for k, (mask, _) in enumerate(checks) if mask.any()]
    if hits:
        r, k = min(hits)
        raise RuleError(_message(case, plan, v, r, checks[k][1]))


def _message(case: OffloadCase, plan: OffloadPlan, v: dict, r: int, kind: str) -> str:  # type: ignore[type-arg]
    name = f"residency {int(plan.index[r]) + 1} of {case.ids[int(plan.tensor[r])]}"
    tid = case.ids[int(plan.tensor[r])]
    p, f, prev = int(plan.prefetch[r]), int(v["first"][r]), int(v["prev_last"][r])
    x = int(v["steps_at"][r])
    wrote = "produced" if v["mode"][r] == PRODUCED else "written"
    words = {
        "early": f"starts its copy-in after step {p} but its previous residency ends at "
        f"step {prev}",
        "late": f"starts its copy-in after step {p}, not before its first use at step {f}",
        "decode range": f"is decoded before step {x}, which must come after its copy-in "
        f"(after step {p}) and no later than its first use at step {f}",
        "decode on full": "has decode_before, but its copy-in is not compressed (the "
        "residency before it was not parked with out: compressed)",
        "not recomputable": f"is recomputed, but {tid} is not recomputable",
        "recompute range": f"is recomputed before step {x}, which must come after its "
        f"previous residency's last use at step {prev} and no later than its first use at "
        f"step {f}",
        "out on last": f"is the last residency of {tid} but has out: how it ends follows "
        "from the tensor's end",
        "dirty drop": f"is dropped after step {int(v['last'][r])}, but it was {wrote} on the "
        "device and no current copy is off the device: copy it out, or recompute the next "
        "residency",
        "not compressible": f"is parked compressed, but {tid} is not compressible",
        "no nvme": "is parked on nvme, but the case has no nvme tier",
    }[kind]
    return f"{name} {words}"
