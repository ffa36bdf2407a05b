"""Experiments (not shipped): KV caches in a zone at the bottom, kept as a ring in their
replacement order; temporaries above the zone. See predict_notes.md, "Structural
layouts"."""

from __future__ import annotations

import heapq
from bisect import bisect_right

from cold_variants import Ties
from online_greedy import align_up


class Zone(Ties):
    """KV caches: next fit from the end of the last cache placed, among gaps that start
    below the zone's top Z (the highest end of a live cache); else the lowest gap below Z
    that fits (the ring wraps); else at Z's gap or the top (the zone grows). Temporaries:
    the highest gap above Z that fits below the peak (HANG), else best fit above Z, else
    the top: never among the caches."""

    HANG = True

    def __init__(self, capacity: int, names: list[str]) -> None:
        super().__init__(capacity, names)
        self.head = 0
        self.kv_ends: list[int] = []  # max-heap (negated) of live cache ends, lazy
        self.kv_live: dict[str, int] = {}
        self.dead: dict[int, int] = {}

    def zone_top(self) -> int:
        h = self.kv_ends
        while h and self.dead.get(-h[0], 0):
            self.dead[-h[0]] -= 1
            heapq.heappop(h)
        return -h[0] if h else 0

    def place(self, bid: str, size: int, align: int, s: int, o: int) -> int:
        bf = self.bf
        if s < 0:  # above the top
            end = align_up(o + size, align)
            bf._above_top(o, end)
            bf.live[bid] = (o, end)
            bf.peak = max(bf.peak, end)
            return o
        return self.carve(bid, size, align, (s, o))

    def cache_spot(self, size: int, align: int) -> tuple[int, int]:
        bf, z, h = self.bf, self.zone_top(), self.head
        starts = bf.starts
        k = max(bisect_right(starts, h) - 1, 0)
        for s in starts[k:]:  # ahead of the head, inside the zone
            if s >= z:
                break
            o = align_up(max(s, h), align)
            if o + size <= bf.gap_end[s]:
                return s, o
        for s in starts:  # wrap: the lowest that fits inside the zone
            if s >= z:
                break
            o = align_up(s, align)
            if o + size <= bf.gap_end[s]:
                return s, o
        k = bisect_right(starts, z) - 1  # grow: the gap holding z, or the next ones
        for s in starts[max(k, 0) :]:
            o = align_up(s, align)
            if o + size <= bf.gap_end[s]:
                return s, o
        return -1, align_up(bf.top, align)

    def temp_spot(self, size: int, align: int) -> tuple[int, int]:
        bf, z = self.bf, self.zone_top()
        starts = bf.starts
        lo = bisect_right(starts, z) - 1
        cands = starts[max(lo, 0) :]
        if self.HANG:
            for s in reversed(cands):
                e = bf.gap_end[s]
                o = (e - size) // align * align
                if o >= max(s, z):
                    return s, o
        else:
            best = None
            for s in cands:
                e = bf.gap_end[s]
                o = align_up(max(s, z), align)
                if o + size <= e and (best is None or e - s < best[0]):
                    best = (e - s, s, o)
            if best:
                return best[1], best[2]
        return -1, align_up(max(bf.top, z), align)

    def alloc(self, bid: str, size: int, align: int, values: list[str]) -> int:
        if values[self.cat] == "kv_cache":
            self.seen = True
            off = self.place(bid, size, align, *self.cache_spot(size, align))
            self.head = off + size
            heapq.heappush(self.kv_ends, -(off + size))
            self.kv_live[bid] = off + size
            return off
        if not self.seen:
            return super().alloc(bid, size, align, values)
        return self.place(bid, size, align, *self.temp_spot(size, align))

    def free(self, bid: str) -> None:
        end = self.kv_live.pop(bid, None)
        if end is not None:
            self.dead[end] = self.dead.get(end, 0) + 1
        super().free(bid)


class ZoneBF(Zone):
    HANG = False


class ZoneFF(Zone):
    """Zone whose caches take the lowest gap that fits (first fit), not next fit."""

    def cache_spot(self, size: int, align: int) -> tuple[int, int]:
        self.head = 0
        return super().cache_spot(size, align)


class ZoneFFBF(ZoneFF):
    HANG = False
