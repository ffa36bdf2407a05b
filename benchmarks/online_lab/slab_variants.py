"""Experiments (not shipped): online-serve with KV caches on a conveyor (a ring in
replacement order) and the step's temporaries at the conveyor's head. See
predict_notes.md, "Structural layouts"."""

from __future__ import annotations

from bisect import bisect_right

from cold_variants import Ties
from online_greedy import align_up

MIB = 1 << 20


class Conveyor(Ties):
    """KV caches: next fit from the end of the last cache placed (they are replaced in
    the order they were made, so the free range ahead of the head is where the old ones
    are being freed). Temporaries of BIG bytes or more: next fit from the head too,
    without moving it (they die before the next layer's caches come). The rest: Ties."""

    BIG = MIB
    TOP_GROW = False  # when the head reaches the top, continue there instead of wrapping

    def __init__(self, capacity: int, names: list[str]) -> None:
        super().__init__(capacity, names)
        self.head = 0

    def next_fit(self, size: int, align: int) -> tuple[int, int] | None:
        bf = self.bf
        k = bisect_right(bf.starts, self.head) - 1
        order = bf.starts[max(k, 0) :] + bf.starts[: max(k, 0)]
        for s in order:
            e = bf.gap_end[s]
            o = align_up(max(s, self.head) if s <= self.head < e else s, align)
            if o + size <= e:
                return s, o
        return None

    def alloc(self, bid: str, size: int, align: int, values: list[str]) -> int:
        cat = values[self.cat]
        if cat == "kv_cache":
            self.seen = True
            got = self.next_fit(size, align)
            off = self.carve(bid, size, align, got) if got else self.bf.alloc(bid, size, align)
            self.head = off + size
            return off
        if self.seen and size >= self.BIG:
            got = self.next_fit(size, align)
            if got:
                return self.carve(bid, size, align, got)
        return super().alloc(bid, size, align, values)


class ConveyorAll(Conveyor):
    BIG = 0


class Conveyor4(Conveyor):
    BIG = 4 * MIB


class ConveyorTopSmall(Conveyor):
    """Conveyor; temporaries under BIG take the highest gap that fits (away from the
    head), or the top."""

    def alloc(self, bid: str, size: int, align: int, values: list[str]) -> int:
        if values[self.cat] == "kv_cache" or not self.seen or size >= self.BIG:
            return super().alloc(bid, size, align, values)
        bf = self.bf
        for s in reversed(bf.starts):
            e = bf.gap_end[s]
            o = (e - size) // align * align
            if o >= s and e > self.head:
                return self.carve(bid, size, align, (s, o))
        return bf.alloc(bid, size, align)


class ConveyorStrict(Conveyor):
    """Conveyor whose caches wrap only to the lowest gap that fits (first fit from the
    bottom) and never take a gap below the head otherwise; big temporaries at the head,
    small ones best fit (Ties)."""

    def next_fit(self, size: int, align: int) -> tuple[int, int] | None:
        bf = self.bf
        k = bisect_right(bf.starts, self.head) - 1
        for s in bf.starts[max(k, 0) :]:
            e = bf.gap_end[s]
            o = align_up(max(s, self.head), align)
            if o + size <= e:
                return s, o
        if align_up(self.head, align) >= bf.top or not bf.starts:
            return None  # at the top: grow
        for s in bf.starts:
            e = bf.gap_end[s]
            o = align_up(s, align)
            if o + size <= e:
                return s, o
        return None
