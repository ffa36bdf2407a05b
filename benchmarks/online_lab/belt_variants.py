"""Experiments (not shipped): online-serve on a belt. KV caches are replaced in a fixed
order (layer after layer, request after request), so written one after another they form
a ring whose free part (the belt's gap) lies between the newest cache and the oldest one;
the step's temporaries go into that gap, at its far end. See predict_notes.md,
"Structural layouts"."""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort

from cold_variants import Ties
from online_greedy import align_up


class Belt(Ties):
    """Caches at the head (the end of the last cache placed) when the free gap there holds
    them; at the ring's end (RING x capacity, the bound by the capacity rule) the head
    wraps to the lowest gap; else next fit ahead, else Ties. Temporaries: the highest gap
    between the head and the next live cache above it (the oldest cache), else Ties."""

    RING = (5, 8)

    def __init__(self, capacity: int, names: list[str]) -> None:
        super().__init__(capacity, names)
        self.ring = capacity * self.RING[0] // self.RING[1]
        self.head = 0
        self.kv_starts: list[int] = []
        self.kv_of: dict[str, int] = {}

    def gap_at(self, x: int) -> tuple[int, int] | None:
        """The free gap holding address x (below the top), or (top, inf) above it."""
        bf = self.bf
        if x >= bf.top:
            return bf.top, 1 << 62
        k = bisect_right(bf.starts, x) - 1
        if k >= 0 and bf.gap_end[bf.starts[k]] > x:
            s = bf.starts[k]
            return s, bf.gap_end[s]
        return None

    def put(self, bid: str, size: int, align: int, o: int | None) -> int | None:
        """Take [o, o + size) when it is free (else None: the caller falls back)."""
        if o is None or not self.bf.take(bid, o, align_up(o + size, align)):
            return None
        return o

    def cache_spot(self, size: int, align: int) -> int | None:
        h = self.head
        g = self.gap_at(h)
        if g is not None:
            o = align_up(h, align)
            if o + size <= min(g[1], max(self.ring, o + size if h >= self.bf.top else 0)):
                return o
        if g is None or align_up(h, align) + size > self.ring or g[1] >= self.ring:
            bf = self.bf  # wrap: the lowest gap that fits
            for s in bf.starts:
                o = align_up(s, align)
                if o + size <= bf.gap_end[s]:
                    return o
        bf = self.bf  # next fit ahead
        k = bisect_right(bf.starts, h)
        for s in bf.starts[k:]:
            o = align_up(s, align)
            if o + size <= bf.gap_end[s]:
                return o
        return None

    def temp_spot(self, size: int, align: int) -> int | None:
        bf, h = self.bf, self.head
        k = bisect_right(self.kv_starts, h)
        lim = self.kv_starts[k] if k < len(self.kv_starts) else self.ring
        lim = max(lim, h)
        lo = bisect_right(bf.starts, h) - 1
        hi = bisect_left(bf.starts, lim)
        for s in reversed(bf.starts[max(lo, 0) : hi]):
            e = min(bf.gap_end[s], lim)
            o = (e - size) // align * align
            if o >= max(s, h):
                return o
        if bf.top < lim:  # the space above the top, below lim
            o = (lim - size) // align * align
            if o >= max(align_up(bf.top, align), h):
                return o
        return None

    def alloc(self, bid: str, size: int, align: int, values: list[str]) -> int:
        if values[self.cat] == "kv_cache":
            self.seen = True
            off = self.put(bid, size, align, self.cache_spot(size, align))
            off = self.bf.alloc(bid, size, align) if off is None else off
            self.head = off + size
            insort(self.kv_starts, off)
            self.kv_of[bid] = off
            return off
        if self.seen:
            off = self.put(bid, size, align, self.temp_spot(size, align))
            if off is not None:
                return off
        return super().alloc(bid, size, align, values)

    def free(self, bid: str) -> None:
        off = self.kv_of.pop(bid, None)
        if off is not None:
            del self.kv_starts[bisect_left(self.kv_starts, off)]
        super().free(bid)


class BeltColumns(Belt):
    """Belt whose window-opening caches (step '-') are laid out in the belt's order, so that
    step 0 is already a clean conveyor: the first request's caches at the ring's end,
    downward (its K_l at ring - (l+1)·s, then its V_l below them, once the layer count L is
    known: V_0 comes after K_{L-1}); every later request's K_l and V_l at the end of column
    l, column l starting at l·W with W = (ring - 2·L·s) / L; the head starts at the end
    of the last column."""

    def __init__(self, capacity: int, names: list[str]) -> None:
        super().__init__(capacity, names)
        self.step_ix, self.layer_ix, self.req_ix = (
            names.index("step"), names.index("layer"), names.index("request"))  # fmt: skip
        self.first_req = None
        self.first_k: list[int] = []  # offsets of r0's K caches
        self.layers = 0
        self.col_end: list[int] = []
        self.in_window = True

    def window(self, bid: str, size: int, align: int, values: list[str]) -> int | None:
        req, layer = values[self.req_ix], int(values[self.layer_ix])
        if self.first_req is None:
            self.first_req = req
        if req == self.first_req:
            if self.layers == 0 and (not self.first_k or layer > 0):
                o = (self.ring - (len(self.first_k) + 1) * size) // align * align
                self.first_k.append(o)
                return self.put(bid, size, align, o)
            if self.layers == 0:
                self.layers = len(self.first_k)
            o = (self.first_k[-1] - (layer + 1) * size) // align * align
            if o < 0:
                return None
            self.r0_low = o
            return self.put(bid, size, align, o)
        if not self.col_end:
            if self.layers == 0:
                return None
            w = (min(self.first_k) - self.layers * size) // self.layers
            w = w // align * align
            self.col_end = [k * w for k in range(self.layers)]
            self.col_w = w
        o = align_up(self.col_end[layer], align)
        if o + size > (layer + 1) * self.col_w or not self.bf.is_free(o, o + size):
            return None
        self.col_end[layer] = o + size
        return self.put(bid, size, align, o)

    def alloc(self, bid: str, size: int, align: int, values: list[str]) -> int:
        if values[self.cat] == "kv_cache" and values[self.step_ix] == "-" and self.in_window:
            off = self.window(bid, size, align, values)
            if off is None:
                off = self.bf.alloc(bid, size, align)
            self.head = off + size if not self.col_end else max(self.col_end)
            self.seen = True
            insort(self.kv_starts, off)
            self.kv_of[bid] = off
            return off
        self.in_window = False
        return super().alloc(bid, size, align, values)


class BeltStrict(BeltColumns):
    """BeltColumns whose head never jumps: a cache goes at the head when the free gap there
    holds it, else at the ring's start (the head wraps) when the gap there holds it and no
    live cache lies between the head and the ring's end other than the first request's;
    else best fit (Ties) without moving the head. The head wraps only into a gap of at least
    WRAP x the ring (else it would catch up with the oldest cache at once: each new cache
    is larger than the one freed before it)."""

    WRAP = 1 / 32

    def cache_spot(self, size: int, align: int) -> int | None:
        h = self.head
        g = self.gap_at(h)
        o = align_up(h, align)
        if g is not None and o + size <= min(g[1], self.ring):
            return o
        k = bisect_right(self.kv_starts, h)
        top_live = self.kv_starts[k] if k < len(self.kv_starts) else self.ring
        end_zone = getattr(self, "r0_low", self.ring)
        if (top_live >= end_zone - 1 or g is None) and self.bf.starts:
            s0 = self.bf.starts[0]  # the lowest gap: where the ring starts again
            o = align_up(s0, align)
            room = min(self.bf.gap_end[s0], self.ring) - o
            if s0 < h and room >= size and room >= self.WRAP * self.ring:
                return o
        return None

    def alloc(self, bid: str, size: int, align: int, values: list[str]) -> int:
        if values[self.cat] == "kv_cache" and not (values[self.step_ix] == "-" and self.in_window):
            self.in_window = False
            self.seen = True
            off = self.put(bid, size, align, self.cache_spot(size, align))
            if off is not None:
                self.head = off + size
            else:
                off = self.bf.alloc(bid, size, align)
            insort(self.kv_starts, off)
            self.kv_of[bid] = off
            return off
        return super().alloc(bid, size, align, values)


class BeltStrict16(BeltStrict):
    WRAP = 1 / 16


class BeltStrict64(BeltStrict):
    WRAP = 1 / 64
