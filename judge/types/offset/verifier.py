"""Exact verifier for `offset` plans: integer-exact, O(n log n), never all-pairs.

Rules (DESIGN.md): every offset aligned, every buffer within the capacity, and
no two buffers whose lifespans intersect share a byte. Alignment and capacity
are checked vectorized. The overlap named is the one a sweep over lifespan events
meets first (ends before starts at equal times, as lifespans are half-open; starts
at equal times in row order): the buffer whose start is the earliest such event
that meets a live buffer, and of the live buffers it meets, the lowest in memory.
numpy finds it (start_pieces); where that would take too much memory, a sweep that
keeps the live buffers sorted by offset does (before the first violation they are
disjoint, so a new buffer can only collide with its neighbours in that order).
"""

from __future__ import annotations

import bisect

import numpy as np

from judge.types.base import Verification
from judge.types.offset.case import OffsetCase
from judge.types.offset.plan import OffsetPlan
from judge.types.offset.sort_keys import by_time_then_kind, stable_order
from judge.verdict import Verdict


def verify(case: OffsetCase, plan: OffsetPlan) -> Verification:
    offset = plan.offset
    end = ends(offset, case.size)
    peak = int(end.max()) if len(case) else 0
    message = (
        _misaligned(case, offset)
        or _over_capacity(case, offset)
        or _first_overlap(case, offset, end)
    )
    if message:
        return Verification(Verdict.INVALID_PLAN, message, peak)
    return Verification(Verdict.OK, "", peak)


def lower_bound(case: OffsetCase) -> int:
    """Max over time of the total size of live buffers (the max-load bound)."""
    if not len(case):
        return 0
    by_lower, by_upper = stable_order(case.lower), stable_order(case.upper)
    size = case.size
    # Running sums never pass the total size; when that could pass int64, sum exactly.
    if int(size.max()) * len(case) >= 2**63:
        size = size.astype(object)
    started = np.cumsum(size[by_lower])  # by each start, in order of (time, row)
    ended = np.zeros(len(case) + 1, size.dtype)
    np.cumsum(size[by_upper], out=ended[1:])
    # Just after a buffer starts at t, the buffers ending at t or before are gone: a buffer
    # ending at t frees its bytes for one starting at t. The load peaks just after a start.
    gone = np.searchsorted(case.upper[by_upper], case.lower[by_lower], side="right")
    return int((started - ended[gone]).max())


def ends(offset: np.ndarray, size: np.ndarray) -> np.ndarray:
    """offset + size, exactly: both lie in [0, 2^62], so the sum fits uint64 (not int64)."""
    return np.add(offset, size, dtype=np.uint64, casting="unsafe")


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


def _first_overlap(case: OffsetCase, offset: np.ndarray, end: np.ndarray) -> str:
    hit = find_overlap(case.lower, case.upper, offset, end)
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
    """The pair (live, new) of rectangles [lower, upper) x [start, end) that the sweep meets
    first (see the module's doc), or None when no two intersect. Sizes must be positive."""
    if not len(lower):
        return None
    clipped = _clip_ends(start, end)
    found = False if clipped is None else start_pieces(lower, upper, start, clipped)
    if found is False:
        return _sweep(lower, upper, start, end)
    if found is None:
        return None
    return _lowest_live(lower, upper, start, clipped, found), found


def _clip_ends(start: np.ndarray, end: np.ndarray) -> np.ndarray | None:
    """`end` in the dtype of `start` (int64), each end past every start made one past the
    last: exact for every comparison with a start. None when that cannot be done."""
    if end.dtype == start.dtype:
        return end
    if start.dtype != np.int64 or end.dtype != np.uint64 or int(start.min()) < 0:
        return None
    if int(end.max()) < 2**63:
        return end.view(np.int64)  # the usual case: no end needs clipping
    return np.minimum(end, np.uint64(int(start.max()) + 1)).astype(np.int64)


def start_pieces(
    lower: np.ndarray, upper: np.ndarray, start: np.ndarray, end: np.ndarray
) -> int | bool | None:
    """The rectangle whose start event is the first to meet a live rectangle, or None
    when none does; False when lifespans are empty or the pieces would be too many.

    The bytes are cut at every rectangle's start into pieces. Two rectangles that
    intersect both cover the piece at the higher of their starts; in each piece, the
    rectangles over it in start-event order must each end before the next starts. The
    first to break that, over all pieces, is the sweep's first violation: in its piece,
    the earlier rectangles are disjoint in time (no earlier violation), so the one just
    before it ends last of them and overlaps it."""
    n = len(lower)
    if (upper <= lower).any() or end.dtype != start.dtype:
        return False
    first, count = _pieces_of(start, end)
    if count is not None and int(count.sum()) > 4 * n + 1024:
        return False
    order = stable_order(lower)  # start events in order: by time, then by row
    if count is None:
        rect, piece = order, first[order]
    else:
        count = count[order]
        rect = np.repeat(order, count)
        before = np.repeat(np.cumsum(count) - count, count)
        piece = np.repeat(first[order], count) + np.arange(len(rect)) - before
    by_piece = stable_order(piece)  # by piece, then start-event order
    rect, piece = rect[by_piece], piece[by_piece]
    clash = (piece[1:] == piece[:-1]) & (upper[rect[:-1]] > lower[rect[1:]])
    hit = np.flatnonzero(clash) + 1
    if not hit.size:
        return None
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n)
    return int(rect[hit[np.argmin(rank[rect[hit]])]])


def _pieces_of(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """The piece (numbered in byte order) where each rectangle starts, and how many it
    covers: None when each covers one (its end is at most the next start)."""
    by_start = stable_order(start)
    ordered = start[by_start]
    fresh = np.empty(len(start), bool)
    fresh[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=fresh[1:])
    cuts = ordered[fresh]
    first = np.empty(len(start), np.int64)
    first[by_start] = np.cumsum(fresh) - 1
    following = np.append(cuts[1:], np.iinfo(np.int64).max)
    if (end <= following[first]).all():
        return first, None
    return first, np.searchsorted(cuts, end) - first


def _lowest_live(
    lower: np.ndarray, upper: np.ndarray, start: np.ndarray, end: np.ndarray, new: int
) -> int:
    """Of the rectangles live at `new`'s start event that it meets, the lowest in memory
    (the sweep finds the one below `new`'s start, else the first above it)."""
    earlier = (lower < lower[new]) | ((lower == lower[new]) & (np.arange(len(lower)) < new))
    live = earlier & (upper > lower[new])
    meets = live & (start < end[new]) & (end > start[new])
    candidates = np.flatnonzero(meets)
    return int(candidates[np.argmin(start[candidates])])


def _sweep(
    lower: np.ndarray, upper: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[int, int] | None:
    """find_overlap by one sweep over the events, in Python: where pieces are too many."""
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
