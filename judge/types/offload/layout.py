"""Each residency's place in step time and its way in and out (README.md, "Plan").

Step time is counted in points: 2s is "during step s", 2s+1 is "after step s", -1 is
"before step 0". A residency holds all its bytes over [full_lower, upper); one copied
in compressed holds only its last `compressed size` bytes over [lower, full_lower).
The way each residency comes in and leaves follows from a walk over each tensor's
residencies in order (where its off-device copy is, whether it is current)."""

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
FULL, SMALL = 0, 1  # the form of an off-device copy


class RuleError(Exception):
    """A plan breaks a rule; the message names the residency."""


@dataclass(frozen=True)
class Layout:
    first: np.ndarray  # first and last use step of each residency (plan order)
    last: np.ndarray
    lower: np.ndarray  # first point it holds bytes
    upper: np.ndarray  # first point after it (2 * last + 1, or 2T for tensors kept to the end)
    final: np.ndarray  # bool: the tensor's last residency
    full_lower: np.ndarray  # first point all its bytes are held (> lower only if compressed)
    at: np.ndarray  # the step its decode / recompute runs before (NO_STEP: none)
    out: np.ndarray  # how it leaves: OUT_* code, FINAL_OUT, or NO_OUT
    compressed_in: np.ndarray  # bool: its copy-in moves the compressed bytes
    from_nvme: np.ndarray  # bool: its copy-in reads NVMe (through the host)
    reads: np.ndarray  # the residency whose copy-out wrote what its copy-in reads; -1: none
    host_windows: np.ndarray  # int64 [k, 4]: host copies (first point, last point, bytes, tensor)


def point_name(point: int) -> str:
    if point < 0:
        return "before step 0"
    return f"during step {point // 2}" if point % 2 == 0 else f"after step {point // 2}"


def residency_name(case: OffloadCase, plan: OffloadPlan, r: int) -> str:
    return f"residency {int(plan.index[r]) + 1} of {case.ids[int(plan.tensor[r])]}"


def use_windows(case: OffloadCase, plan: OffloadPlan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(index of each residency's first use in case.uses, first use, last use)."""
    ends = np.cumsum(plan.count)
    before = ends - plan.count
    tensor_base = before[np.searchsorted(plan.tensor, plan.tensor, side="left")]
    first_idx = case.use_start[plan.tensor] + before - tensor_base
    return first_idx, case.uses[first_idx], case.uses[first_idx + plan.count - 1]


def lay_out(case: OffloadCase, plan: OffloadPlan) -> Layout:
    """The layout of a plan whose use counts add up (raises RuleError on a broken rule
    about ways in and out)."""
    first_idx, first, last = use_windows(case, plan)
    n = len(plan)
    final = np.append(plan.tensor[1:] != plan.tensor[:-1], True) if n else np.zeros(0, bool)
    mode = plan.mode if plan.mode is not None else np.where(plan.index == 0, PRODUCED, COPIED)
    at = plan.at if plan.at is not None else np.full(n, NO_STEP)
    kept = final & (case.end_tier()[plan.tensor] == DEVICE)
    upper = np.where(kept, 2 * len(case.steps), 2 * last + 1)
    walk = _Walk(case, plan, first_idx, first, last, final, mode, at)
    walk.run()
    steps_at = np.array(walk.at, dtype=np.int64)
    compressed_in = np.array(walk.compressed_in, dtype=bool)
    lower = np.where(
        mode == PRODUCED,
        2 * first,
        np.where(mode == RECOMPUTED, 2 * steps_at, 2 * plan.prefetch + 1),
    )
    return Layout(
        first, last, lower, upper, final,
        full_lower=np.where(compressed_in, 2 * steps_at, lower),
        at=steps_at,
        out=np.array(walk.out, dtype=np.int64),
        compressed_in=compressed_in,
        from_nvme=np.array(walk.from_nvme, dtype=bool),
        reads=np.array(walk.reads, dtype=np.int64),
        host_windows=np.array(walk.host, dtype=np.int64).reshape(-1, 4),
    )  # fmt: skip


class _Walk:
    """Each tensor's residencies in order: where its off-device copy is (tier, form),
    whether it is current, and which copy-out wrote it decide how each residency may
    come in and leave."""

    def __init__(self, case, plan, first_idx, first, last, final, mode, at):  # type: ignore[no-untyped-def]
        self.case, self.plan = case, plan
        n = len(plan)
        wc = np.concatenate([[0], np.cumsum(case.writes_mask())])
        dirty = (wc[first_idx + plan.count] - wc[first_idx] > 0) | (mode == PRODUCED)
        self.dirty, self.first, self.last = dirty.tolist(), first.tolist(), last.tolist()
        self.final, self.mode, self.at = final.tolist(), mode.tolist(), at.tolist()
        self.tensor, self.prefetch = plan.tensor.tolist(), plan.prefetch.tolist()
        self.given_out = plan.out.tolist() if plan.out is not None else [NO_OUT] * n
        self.start, self.end = case.start_tier().tolist(), case.end_tier().tolist()
        self.size = case.size.tolist()
        self.csize = case.csize.tolist() if case.csize is not None else [0] * len(case)
        self.out = [NO_OUT] * n
        self.compressed_in, self.from_nvme = [False] * n, [False] * n
        self.reads = [-1] * n
        self.host: list[tuple[int, int, int, int]] = []
        self.end_point = 2 * len(case.steps) - 1  # after the last step
        # the off-device copy of the tensor being walked
        self.tier = self.form = self.writer = self.version = 0
        self.valid = False

    def fail(self, r: int, words: str) -> RuleError:
        return RuleError(f"{residency_name(self.case, self.plan, r)} {words}")

    def run(self) -> None:
        tensor = self.tensor
        for r in range(len(tensor)):
            t = tensor[r]
            same = r > 0 and tensor[r - 1] == t
            if not same:  # a new tensor: its copy before step 0
                self.tier, self.form, self.writer = self.start[t], FULL, -1
                self.valid = self.tier != DEVICE
                self.version = self._open(-1, self.size[t], t) if self.tier == HOST else -1
            prev_last = self.last[r - 1] if same else -1
            if self.mode[r] == COPIED:
                self._copied_in(r, prev_last, same)
            elif self.mode[r] == RECOMPUTED:
                self._recomputed(r, t, prev_last)
            if self.dirty[r]:
                self.valid = False
            if self.final[r]:
                self._ends(r, t)
            else:
                self._leaves(r, t)

    def _copied_in(self, r: int, prev_last: int, same: bool) -> None:
        p, f = self.prefetch[r], self.first[r]
        if same and p < prev_last:
            raise self.fail(
                r, f"starts its copy-in after step {p} but its previous residency ends at "
                f"step {prev_last}",
            )  # fmt: skip
        if p >= f:
            raise self.fail(
                r, f"starts its copy-in after step {p}, not before its first use at step {f}"
            )
        self.compressed_in[r] = self.form == SMALL
        self.from_nvme[r], self.reads[r] = self.tier == NVME, self.writer
        if self.version >= 0:  # the host copy it reads is kept until its first use
            self._keep(self.version, 2 * f - 1)
        if self.form == SMALL:
            x = f if self.at[r] == NO_STEP else self.at[r]
            if not p < x <= f:
                raise self.fail(
                    r, f"is decoded before step {x}, which must come after its copy-in "
                    f"(after step {p}) and no later than its first use at step {f}",
                )  # fmt: skip
            self.at[r] = x
        elif self.at[r] != NO_STEP:
            raise self.fail(
                r, "has decode_before, but its copy-in is not compressed (the residency "
                "before it was not parked with out: compressed)",
            )  # fmt: skip

    def _recomputed(self, r: int, t: int, prev_last: int) -> None:
        x, f = self.at[r], self.first[r]
        if self.case.recompute_cost is None or self.case.recompute_cost[t] < 0:
            raise self.fail(r, f"is recomputed, but {self.case.ids[t]} is not recomputable")
        if not prev_last < x <= f:
            raise self.fail(
                r, f"is recomputed before step {x}, which must come after its previous "
                f"residency's last use at step {prev_last} and no later than its first use "
                f"at step {f}",
            )  # fmt: skip

    def _ends(self, r: int, t: int) -> None:
        if self.given_out[r] != NO_OUT:
            raise self.fail(
                r, f"is the last residency of {self.case.ids[t]} but has out: how it ends "
                "follows from the tensor's end",
            )  # fmt: skip
        if self.end[t] != HOST:
            return
        if self.valid and self.tier == HOST and self.form == FULL:
            self._keep(self.version, self.end_point)  # the host copy is already current
        else:
            self.out[r] = FINAL_OUT
            self._open(2 * self.last[r] + 1, self.size[t], t, self.end_point)

    def _leaves(self, r: int, t: int) -> None:
        o = OUT_COPY if self.given_out[r] == NO_OUT else self.given_out[r]
        self.out[r] = o
        if o == OUT_DROP:
            if not self.valid and self.mode[r + 1] != RECOMPUTED:
                why = "produced" if self.mode[r] == PRODUCED else "written"
                raise self.fail(
                    r, f"is dropped after step {self.last[r]}, but it was {why} on the device "
                    "and no current copy is off the device: copy it out, or recompute the "
                    "next residency",
                )  # fmt: skip
            return
        if o == OUT_COMPRESSED and self.csize[t] == 0:
            raise self.fail(r, f"is parked compressed, but {self.case.ids[t]} is not compressible")
        if o == OUT_NVME and self.case.nvme is None:
            raise self.fail(r, "is parked on nvme, but the case has no nvme tier")
        self.tier = NVME if o == OUT_NVME else HOST
        self.form = SMALL if o == OUT_COMPRESSED else FULL
        self.valid, self.writer = True, r
        nbytes = self.csize[t] if self.form == SMALL else self.size[t]
        self.version = -1 if o == OUT_NVME else self._open(2 * self.last[r] + 1, nbytes, t)

    def _keep(self, version: int, point: int) -> None:
        lo, hi, nbytes, t = self.host[version]
        self.host[version] = (lo, max(hi, point), nbytes, t)

    def _open(self, point: int, nbytes: int, t: int, until: int | None = None) -> int:
        self.host.append((point, point if until is None else until, nbytes, t))
        return len(self.host) - 1
