"""Experiments (not shipped): online-serve placement against a ceiling at the lower bound
read from the capacity (the problem's rule: capacity = 1.6 x bound, rounded up to 2 MiB,
so bound <= capacity * 5 / 8). See predict_notes.md, "Structural layouts"."""

from __future__ import annotations

from cold_variants import Ties
from online_greedy import align_up

MIB = 1 << 20


class Ceiling(Ties):
    """Temporaries of BIG bytes or more hang from a ceiling H = capacity * 5 / 8 (>= the
    lower bound): the highest offset below H that is free (a gap below the top, or the
    space above the top); when none fits below H, Ties. Everything else: Ties."""

    BIG = MIB
    FRACTION = (5, 8)

    def __init__(self, capacity: int, names: list[str]) -> None:
        super().__init__(capacity, names)
        num, den = self.FRACTION
        self.h = capacity * num // den

    def hang(self, size: int, align: int) -> tuple[int, int] | None:
        bf, h = self.bf, self.h
        if bf.top < h:  # the free space above the top, below the ceiling
            o = (h - size) // align * align
            if o >= align_up(bf.top, align):
                return -1, o
        for s in reversed(bf.starts):
            if s >= h:
                continue
            e = min(bf.gap_end[s], h)
            o = (e - size) // align * align
            if o >= s:
                return s, o
        return None

    def alloc(self, bid: str, size: int, align: int, values: list[str]) -> int:
        if values[self.cat] != "kv_cache" and self.seen and size >= self.BIG:
            got = self.hang(size, align)
            if got is not None:
                s, o = got
                bf = self.bf
                if s < 0:
                    end = align_up(o + size, align)
                    bf._above_top(o, end)
                    bf.live[bid] = (o, end)
                    bf.peak = max(bf.peak, end)
                    return o
                return self.carve(bid, size, align, got)
        return super().alloc(bid, size, align, values)


class CeilingAll(Ceiling):
    BIG = 0


class Ceiling64k(Ceiling):
    BIG = 1 << 16


class CeilingFF(Ceiling):
    """Ceiling; KV caches first fit (the lowest gap that fits), so that they stay at the
    floor, away from the temporaries hanging from the ceiling."""

    def alloc(self, bid: str, size: int, align: int, values: list[str]) -> int:
        if values[self.cat] != "kv_cache":
            return super().alloc(bid, size, align, values)
        return first_fit_kv(self, bid, size, align)


def first_fit_kv(policy, bid: str, size: int, align: int) -> int:
    """A KV cache at the lowest gap of `policy`'s free list that fits (CeilingFF,
    guard_variants.EchoFF)."""
    policy.seen = True
    bf = policy.bf
    for s in bf.starts:
        o = align_up(s, align)
        if o + size <= bf.gap_end[s]:
            return policy.carve(bid, size, align, (s, o))
    return bf.alloc(bid, size, align)


class CeilingFFAll(CeilingFF):
    BIG = 0


class CeilingFFPeak(CeilingFFAll):
    """CeilingFFAll whose ceiling rises with the peak (max of the bound's estimate and the
    highest byte used so far)."""

    def alloc(self, bid: str, size: int, align: int, values: list[str]) -> int:
        self.h = max(self.h, self.bf.peak)
        return super().alloc(bid, size, align, values)


class CeilingFFPeakBig(CeilingFFPeak):
    BIG = MIB
