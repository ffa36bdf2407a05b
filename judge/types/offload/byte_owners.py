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
        if i < 0 or end_of[starts[i]] <= start:
            i += 1
        j = bisect.bisect_left(starts, end, i)
        covered = starts[i:j]
        previous = [owner_of[k] for k in covered]
        keep: list[tuple[int, int, int]] = []
        if covered and covered[0] < start:  # the left remainder of a cut segment
            keep.append((covered[0], start, owner_of[covered[0]]))
        keep.append((start, end, owner))
        if covered and end_of[covered[-1]] > end:  # the right remainder
            keep.append((end, end_of[covered[-1]], owner_of[covered[-1]]))
        for k in covered:
            del end_of[k], owner_of[k]
        for lo, hi, who in keep:
            end_of[lo], owner_of[lo] = hi, who
        starts[i:j] = [k[0] for k in keep]
        return previous
