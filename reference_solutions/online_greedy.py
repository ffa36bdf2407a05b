#!/usr/bin/env python3
"""Greedy online allocator: best fit over a free list with coalescing; Python 3.11.

Policy. Memory below `top` is a set of free gaps between live allocations; everything
at or above `top` is free. A request takes the smallest gap it fits in (ties: the
lowest address), at the gap's lowest offset that meets its alignment; when no gap
fits it goes at align_up(top). The bytes it reserves end at the next multiple of its
alignment, so that gaps stay aligned for requests of the same alignment. A free
merges the block with the free gaps on either side (coalescing); a gap that reaches
`top` lowers `top`. If the top would pass the capacity, every gap is tried first
fit; if nothing fits the answer is `top` anyway (invalid) and stderr says why.

Structures: gaps by start and by end (dicts, for coalescing in O(1)) and a sorted
list of (size, start) searched with bisect (best fit in O(log n) plus the few gaps
skipped for alignment). Hints are ignored.

Protocol (judge/types/online/README.md): reads `capacity`, `hints`, then `a ID SIZE
ALIGNMENT HINTS...` (answer one offset line, flushed) and `f ID` lines until `end`.
"""

from __future__ import annotations

import sys
from bisect import bisect_left, bisect_right, insort

SCAN = 64  # gaps tried past the best-fitting size before going to the top


def align_up(x: int, alignment: int) -> int:
    return -(-x // alignment) * alignment


class BestFit:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.top = 0
        self.gap_end: dict[int, int] = {}  # start -> end of each free gap below top
        self.gap_start: dict[int, int] = {}  # end -> start
        self.sizes: list[tuple[int, int]] = []  # (size, start), sorted
        self.starts: list[int] = []  # gap starts, sorted (for take)
        self.live: dict[str, tuple[int, int]] = {}  # id -> reserved [start, end)
        self.peak = 0  # the highest end reserved so far

    # gaps
    def _add_gap(self, start: int, end: int) -> None:
        if end <= start:
            return
        self.gap_end[start] = end
        self.gap_start[end] = start
        insort(self.sizes, (end - start, start))
        insort(self.starts, start)

    def _drop_gap(self, start: int) -> int:
        end = self.gap_end.pop(start)
        del self.gap_start[end]
        del self.sizes[bisect_left(self.sizes, (end - start, start))]
        del self.starts[bisect_left(self.starts, start)]
        return end

    def _find(self, size: int, align: int, limit: int | None) -> tuple[int, int] | None:
        """(gap start, offset) of the best-fitting gap, trying at most `limit` gaps."""
        k = bisect_left(self.sizes, (size, -1))
        stop = len(self.sizes) if limit is None else min(len(self.sizes), k + limit)
        for gsize, gstart in self.sizes[k:stop]:
            off = align_up(gstart, align)
            if off + size <= gstart + gsize:
                return gstart, off
        return None

    def _carve(self, gstart: int, off: int, end: int) -> None:
        """Reserve [off, end) out of the free gap starting at gstart."""
        gend = self._drop_gap(gstart)
        self._add_gap(gstart, off)
        self._add_gap(end, gend)

    def _above_top(self, off: int, end: int) -> None:
        self._add_gap(self.top, off)
        self.top = end

    # requests
    def alloc(self, bid: str, size: int, align: int) -> int:
        found = self._find(size, align, SCAN)
        if found is None:
            off = align_up(self.top, align)
            if off + size > self.capacity:
                found = self._find(size, align, None)
        if found is not None:
            gstart, off = found
            end = min(align_up(off + size, align), self.gap_end[gstart])
            self._carve(gstart, off, end)
        else:
            if off + size > self.capacity:
                print(f"online allocator: {bid} ({size} bytes) does not fit", file=sys.stderr)
            end = align_up(off + size, align)
            self._above_top(off, end)
        self.live[bid] = (off, end)
        self.peak = max(self.peak, end)
        return off

    def is_free(self, off: int, end: int) -> bool:
        if end > self.capacity:
            return False
        if off >= self.top:
            return True
        k = bisect_right(self.starts, off) - 1
        if k < 0:
            return False
        gend = self.gap_end[self.starts[k]]
        return end <= gend or gend == self.top

    def take(self, bid: str, off: int, end: int) -> bool:
        """Reserve exactly [off, end) if it is free (for planned placements)."""
        if not self.is_free(off, end):
            return False
        if off >= self.top:
            self._above_top(off, end)
        else:
            gstart = self.starts[bisect_right(self.starts, off) - 1]
            gend = self.gap_end[gstart]
            if end > gend:  # the gap reaches the top: the block goes past it
                self._drop_gap(gstart)
                self._add_gap(gstart, off)
                self.top = end
            else:
                self._carve(gstart, off, end)
        self.live[bid] = (off, end)
        self.peak = max(self.peak, end)
        return True

    def free(self, bid: str) -> None:
        start, end = self.live.pop(bid)
        if end in self.gap_end:
            end = self._drop_gap(end)
        if start in self.gap_start:
            start = self.gap_start[start]
            self._drop_gap(start)
        if end >= self.top:
            self.top = start
        else:
            self._add_gap(start, end)


def serve(make, stdin=sys.stdin, out=sys.stdout) -> None:
    """The protocol loop. make(capacity, hint names) returns an object with
    alloc(id, size, alignment, hint values) -> offset and free(id)."""
    write, flush = out.write, out.flush
    capacity, names, policy = 2**62, [], None
    for line in iter(stdin.readline, ""):
        words = line.split()
        if not words:
            continue
        kind = words[0]
        if kind == "a":
            if policy is None:
                policy = make(capacity, names)
            write(f"{policy.alloc(words[1], int(words[2]), int(words[3]), words[4:])}\n")
            flush()
        elif kind == "f":
            policy.free(words[1])
        elif kind == "end":
            break
        elif kind == "capacity":
            capacity = int(words[1])
        elif kind == "hints":
            names = words[1:]


class Greedy(BestFit):
    def __init__(self, capacity: int, _names: list[str]) -> None:
        super().__init__(capacity)

    def alloc(self, bid: str, size: int, align: int, _values: list[str] | None = None) -> int:
        return super().alloc(bid, size, align)


if __name__ == "__main__":
    serve(Greedy)
