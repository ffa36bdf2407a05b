"""Who last occupied each device byte, for the timing: disjoint byte segments, each
with the residency that last took it. O(log n) per take (bisect), O(1) when a
residency takes exactly the bytes of one earlier segment (the usual case: a tensor's
residencies at one offset)."""

from __future__ import annotations

import bisect


class ByteOwners:
    """Disjoint, non-empty byte segments [start, end) keyed by start, each with an owner."""

    def __init__(self) -> None:
        self.starts: list[int] = []  # sorted
        self.end_of: dict[int, int] = {}
        self.owner_of: dict[int, int] = {}

    def take(self, start: int, end: int, owner: int) -> list[int]:
        """Make `owner` the occupant of [start, end); return the previous occupants in
        byte order."""
        if self.end_of.get(start) == end:  # the same bytes again
            previous = [self.owner_of[start]]
            self.owner_of[start] = owner
            return previous
        return self._cut(start, end, owner)

    def ready(self, start: int, end: int, owner: int, release: list[int]) -> tuple[int, int]:
        """take(), then (the latest release among the previous occupants, which one):
        (0, -1) when none released after 0; the first in byte order wins ties."""
        if self.end_of.get(start) == end:
            owner_of = self.owner_of
            q = owner_of[start]
            owner_of[start] = owner
            return (release[q], q) if release[q] > 0 else (0, -1)
        best, who = 0, -1
        for q in self._cut(start, end, owner):
            if release[q] > best:
                best, who = release[q], q
        return best, who

    def _cut(self, start: int, end: int, owner: int) -> list[int]:
        starts, end_of, owner_of = self.starts, self.end_of, self.owner_of
        i = bisect.bisect_right(starts, start) - 1
        if i >= 0 and end_of[starts[i]] >= end:  # inside one segment: split it
            return self._split(i, start, end, owner)
        if i < 0 or end_of[starts[i]] <= start:
            i += 1
        j = bisect.bisect_left(starts, end, i)
        covered = starts[i:j]
        previous = [owner_of[k] for k in covered]
        new = [start]
        if covered:
            first, last = covered[0], covered[-1]
            tail_end, tail_owner = end_of[last], owner_of[last]
            for k in covered:
                del end_of[k], owner_of[k]
            if first < start:  # the left remainder of a cut segment
                end_of[first], owner_of[first] = start, previous[0]
                new.insert(0, first)
            if tail_end > end:  # the right remainder
                end_of[end], owner_of[end] = tail_end, tail_owner
                new.append(end)
        end_of[start], owner_of[start] = end, owner
        starts[i:j] = new
        return previous

    def _split(self, i: int, start: int, end: int, owner: int) -> list[int]:
        """[start, end) inside segment i but not all of it: cut the segment around it."""
        starts, end_of, owner_of = self.starts, self.end_of, self.owner_of
        lo = starts[i]
        hi, previous = end_of[lo], owner_of[lo]
        new = []
        if lo < start:  # the left remainder keeps its key
            end_of[lo] = start
            new.append(start)
        if hi > end:  # the right remainder
            end_of[end], owner_of[end] = hi, previous
            new.append(end)
        end_of[start], owner_of[start] = end, owner
        starts[i + 1 : i + 1] = new
        return [previous]
