"""The static rules of an `offload` plan (README.md, "Static validity"): vectorized
checks and one O(n log n) sweep each for device bytes and host bytes."""

from __future__ import annotations

import bisect

import numpy as np

from judge.types.offload.case import OffloadCase
from judge.types.offload.layout import Layout, RuleError, lay_out, point_name, residency_name
from judge.types.offload.plan import RECOMPUTED, OffloadPlan
from judge.types.offset.verifier import find_overlap


def check(case: OffloadCase, plan: OffloadPlan) -> tuple[str, Layout | None]:
    """(the first broken rule in words, or ""; the layout when it could be made) for a
    plan whose use counts add up (`coverage`)."""
    try:
        lay = lay_out(case, plan)
    except RuleError as exc:
        return str(exc), None
    return (
        _misaligned(case, plan)
        or _over_capacity(case, plan)
        or _first_overlap(case, plan, lay)
        or _missing_source(case, plan, lay)
        or _host_overflow(case, lay)
    ), lay


def coverage(case: OffloadCase, plan: OffloadPlan) -> str:
    bad = np.flatnonzero(plan.count < 1)
    if bad.size:
        return f"{residency_name(case, plan, int(bad[0]))} covers no use (uses must be >= 1)"
    if int(plan.count.max(initial=0)) * len(plan) < 2**53:  # float sums are exact
        covered = np.bincount(plan.tensor, weights=plan.count, minlength=len(case))
    else:  # counts near 2^62 (always wrong, but the message must say the true sum)
        covered = np.zeros(len(case), dtype=object)
        np.add.at(covered, plan.tensor, plan.count.astype(object))
    have = np.diff(case.use_start)
    wrong = np.flatnonzero(covered != have)
    if wrong.size:
        i = int(wrong[0])
        return (
            f"the residencies of {case.ids[i]} cover {int(covered[i])} uses, "
            f"but it has {int(have[i])}"
        )
    return ""


def _misaligned(case: OffloadCase, plan: OffloadPlan) -> str:
    bad = np.flatnonzero(plan.offset % case.alignment[plan.tensor])
    if not bad.size:
        return ""
    r = int(bad[0])
    return (
        f"{residency_name(case, plan, r)} has offset {int(plan.offset[r])}, which is not a "
        f"multiple of its alignment {int(case.alignment[plan.tensor[r]])}"
    )


def _over_capacity(case: OffloadCase, plan: OffloadPlan) -> str:
    size = case.size[plan.tensor]
    bad = np.flatnonzero(plan.offset > case.capacity - size)
    if not bad.size:
        return ""
    r = int(bad[0])
    end = int(plan.offset[r] + size[r])
    return (
        f"{residency_name(case, plan, r)} occupies bytes [{int(plan.offset[r])}, {end}), "
        f"past the capacity {case.capacity}"
    )


def pieces(case: OffloadCase, plan: OffloadPlan, lay: Layout) -> tuple[np.ndarray, ...]:
    """(residency, lower, upper, first byte, end byte) of every held piece: a residency
    copied in compressed holds its last `compressed size` bytes from its copy-in and the
    rest from its decode; any other holds all its bytes over its whole window."""
    rows = np.arange(len(plan))
    size = case.size[plan.tensor]
    end = plan.offset + size
    split = np.flatnonzero(lay.compressed_in)
    start = plan.offset.copy()
    if split.size:
        start[split] = end[split] - case.csize[plan.tensor[split]]  # type: ignore[index]
    head = split[start[split] > plan.offset[split]]
    return (
        np.concatenate([rows, head]),
        np.concatenate([lay.lower, lay.full_lower[head]]),
        np.concatenate([lay.upper, lay.upper[head]]),
        np.concatenate([start, plan.offset[head]]),
        np.concatenate([end, start[head]]),
    )


def _first_overlap(case: OffloadCase, plan: OffloadPlan, lay: Layout) -> str:
    owner, lower, upper, lo, hi = pieces(case, plan, lay)
    hit = find_overlap(lower, upper, lo, hi)
    if hit is None:
        return ""
    a, b = hit
    first, second = sorted((int(owner[a]), int(owner[b])))
    bytes_lo, bytes_hi = max(int(lo[a]), int(lo[b])), min(int(hi[a]), int(hi[b]))
    point = max(int(lower[a]), int(lower[b]))
    return (
        f"{residency_name(case, plan, first)} and {residency_name(case, plan, second)} overlap "
        f"{point_name(point)} in bytes [{bytes_lo}, {bytes_hi})"
    )


def source_residencies(case: OffloadCase, plan: OffloadPlan, lay: Layout) -> dict[int, list[int]]:
    """For each recomputed residency, the residencies of its sources it reads; RuleError
    when a source is not fully held both just before and during the step it runs before."""
    found: dict[int, list[int]] = {}
    if plan.mode is None or not (plan.mode == RECOMPUTED).any():
        return found
    recomputed = np.flatnonzero(plan.mode == RECOMPUTED)
    rows, tensors = recomputed.tolist(), plan.tensor[recomputed].tolist()
    found = {r: [] for r in rows}
    if not any(case.sources[t] for t in tensors):
        return found
    row_start = np.searchsorted(plan.tensor, np.arange(len(case) + 1)).tolist()
    full_lower, upper = lay.full_lower.tolist(), lay.upper.tolist()
    for r, x, t in zip(rows, lay.at[recomputed].tolist(), tensors, strict=True):
        for j in case.sources[t]:
            lo, hi = row_start[j], row_start[j + 1]
            q = bisect.bisect_right(full_lower, 2 * x - 1, lo, hi) - 1
            if q < lo or upper[q] <= 2 * x:
                raise RuleError(
                    f"{residency_name(case, plan, r)} is recomputed before step {x} from "
                    f"{case.ids[j]}, but no residency of {case.ids[j]} holds all its bytes "
                    f"both {point_name(2 * x - 1)} and during step {x}"
                )
            found[r].append(q)
    return found


def _missing_source(case: OffloadCase, plan: OffloadPlan, lay: Layout) -> str:
    try:
        lay.memo["sources"] = source_residencies(case, plan, lay)
    except RuleError as exc:
        return str(exc)
    return ""


def _host_overflow(case: OffloadCase, lay: Layout) -> str:
    """Host copies held at each point (first to last point, inclusive) must fit."""
    if case.host_capacity is None or not len(lay.host_windows):
        return ""
    w = lay.host_windows
    points = np.concatenate([w[:, 0], w[:, 1] + 1])
    delta = np.concatenate([w[:, 2], -w[:, 2]])
    if int(w[:, 2].max()) * len(w) >= 2**62:  # int64 sums could wrap: exact ints
        delta = delta.astype(object)
    order = np.argsort(points, kind="stable")
    at, first = np.unique(points[order], return_index=True)
    held = np.cumsum(np.add.reduceat(delta[order], first))
    k = int(np.argmax(held))
    if held[k] <= case.host_capacity:
        return ""
    p = int(at[k])
    there = [case.ids[int(t)] for lo, hi, _, t in w.tolist() if lo <= p <= hi]
    names = ", ".join(there[:3]) + (f" and {len(there) - 3} more" if len(there) > 3 else "")
    return (
        f"host memory holds {int(held[k])} bytes {point_name(p)} ({names}), more than the "
        f"host capacity {case.host_capacity}"
    )
