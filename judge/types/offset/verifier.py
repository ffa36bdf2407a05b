"""Exact verifier for `offset` plans: integer-exact, O(n log n), never all-pairs.

Rules (DESIGN.md): every offset aligned, every buffer within the capacity, and
no two buffers whose lifespans intersect share a byte. Alignment and capacity
are checked vectorized. Overlaps are found by one sweep over lifespan events
(ends before starts at equal times, as lifespans are half-open) keeping the
live buffers sorted by offset: before the first violation they are disjoint,
so a new buffer can only collide with its neighbours in that order.
"""

from __future__ import annotations

import bisect

import numpy as np

from judge.types.base import Verification
from judge.types.offset.case import OffsetCase
from judge.types.offset.plan import OffsetPlan
from judge.types.offset.sort_keys import by_time_then_kind, byte_pieces, stable_order
from judge.verdict import Verdict


def verify(case: OffsetCase, plan: OffsetPlan) -> Verification:
    offset = plan.offset
    peak = int(ends(offset, case.size).max()) if len(case) else 0
    message = (
        _misaligned(case, offset) or _over_capacity(case, offset) or _first_overlap(case, offset)
    )
    if message:
        return Verification(Verdict.INVALID_PLAN, message, peak)
    return Verification(Verdict.OK, "", peak)


def lower_bound(case: OffsetCase) -> int:
    """Max over time of the total size of live buffers (the max-load bound)."""
    if not len(case):
        return 0
    times = np.concatenate([case.upper, case.lower])
    deltas = np.concatenate([-case.size, case.size])
    # At equal times ends sort first: a buffer ending at t frees its bytes for one starting at t.
    order = np.lexsort((deltas, times))
    deltas = deltas[order]
    # Running sums never pass the total size; when that could pass int64, sum exactly.
    if int(case.size.max()) * len(case) >= 2**63:
        deltas = deltas.astype(object)
    return int(np.cumsum(deltas).max())


def ends(offset: np.ndarray, size: np.ndarray) -> np.ndarray:
    """offset + size, exactly: both lie in [0, 2^62], so the sum fits uint64 (not int64)."""
    return offset.astype(np.uint64) + size.astype(np.uint64)


def _misaligned(case: OffsetCase, offset: np.ndarray) -> str:
    bad = np.flatnonzero(offset % case.alignment)
    if not bad.size:
        return ""
    i = int(bad[0])
    return (
        f"buffer {case.ids[i]} has offset {offset[i]}, "
        f"which is not a multiple of its alignment {case.alignment[i]}"
    )


def _over_capacity(case: OffsetCase, offset: np.ndarray) -> str:
    bad = np.flatnonzero(offset > case.capacity - case.size)  # no overflow: both <= 2^62
    if not bad.size:
        return ""
    i = int(bad[0])
    return (
        f"buffer {case.ids[i]} occupies bytes [{offset[i]}, {int(offset[i]) + int(case.size[i])}), "
        f"past the capacity {case.capacity}"
    )


def _first_overlap(case: OffsetCase, offset: np.ndarray) -> str:
    hit = find_overlap(case.lower, case.upper, offset, ends(offset, case.size))
    if hit is None:
        return ""
    a, b = hit
    lo = max(int(offset[a]), int(offset[b]))
    hi = min(int(offset[a]) + int(case.size[a]), int(offset[b]) + int(case.size[b]))
    time = max(int(case.lower[a]), int(case.lower[b]))
    return f"buffers {case.ids[a]} and {case.ids[b]} overlap at time {time} in bytes [{lo}, {hi})"


def find_overlap(
    lower: np.ndarray, upper: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[int, int] | None:
    """The first pair (earliest start time) of rectangles [lower, upper) x [start, end)
    that intersect, or None. Sizes must be positive."""
    if _disjoint(lower, upper, start, end):
        return None
    n = len(lower)
    times = np.concatenate([upper, lower])
    is_start = np.repeat(np.array([0, 1], dtype=np.int64), n)
    events = np.concatenate([~np.arange(n), np.arange(n)])[by_time_then_kind(times, is_start)]
    starts, ends = start.tolist(), end.tolist()
    live: list[int] = []  # start addresses of live buffers, sorted; disjoint so unique
    owner: dict[int, int] = {}  # start address -> buffer
    insort_at, find_left, find_right = live.insert, bisect.bisect_left, bisect.bisect_right
    for i in events.tolist():
        if i < 0:  # an end event: ~buffer
            del live[find_left(live, starts[~i])]
            continue
        s, e = starts[i], ends[i]
        p = find_right(live, s)
        if p and ends[below := owner[live[p - 1]]] > s:
            return below, i
        if p < len(live) and live[p] < e:
            return owner[live[p]], i
        insort_at(p, s)
        owner[s] = i
    return None


def _disjoint(lower: np.ndarray, upper: np.ndarray, start: np.ndarray, end: np.ndarray) -> bool:
    """True when no two rectangles intersect, shown with numpy alone: cut at the ends of
    every byte range, the bytes fall into pieces; on each piece, the rectangles over it
    in order of start time must each end before the next starts. False when one does
    not, or when the rectangles cover many pieces in all or some lasts no time: the
    sweep (which also finds the pair) decides."""
    if not len(lower):
        return True
    if (upper <= lower).any():
        return False
    pairs = byte_pieces(start, end, stable_order(lower))
    if pairs is None:
        return False
    rect, piece = pairs
    order = stable_order(piece)  # by piece, then start time
    rect, piece = rect[order], piece[order]
    same = piece[1:] == piece[:-1]
    return not (upper[rect[:-1][same]] > lower[rect[1:][same]]).any()
