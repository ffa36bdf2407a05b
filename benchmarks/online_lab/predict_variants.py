"""Experiments (not shipped): predictive serve placement. See predict_notes.md."""

from __future__ import annotations

from bisect import bisect_right

from cold_variants import Ties
from online_greedy import align_up


class Reserve(Ties):
    """Keeps one free extent of W bytes below the peak while an engine step runs, for the
    step's coming layers' temporaries: W = MARGIN x the most non-cache bytes live at once
    so far in this step (the layers repeat, so the first layers predict the rest). A KV
    cache whose best fit would break the last such extent goes to the top instead.
    (W from the token count that the step's `input` request reveals was tried first: on
    hidden-like cases the ratio of MLP sizes to input size varies 2x between steps, so
    it predicted nothing; see predict_notes.md.)"""

    PERSIST = False  # also between steps, with the largest W seen
    MARGIN = 1.1

    def __init__(self, capacity: int, names: list[str]) -> None:
        super().__init__(capacity, names)
        self.step_ix = names.index("step")
        self.step = None
        self.temp_live = 0
        self.temp_most = 0
        self.size: dict[str, int] = {}
        self.w = 0
        self.w_most = 0

    def enter(self, values: list[str]) -> None:
        s = values[self.step_ix]
        if s != "-" and s != self.step:
            self.step, self.temp_most, self.w = s, self.temp_live, 0

    def alloc(self, bid: str, size: int, align: int, values: list[str]) -> int:
        self.enter(values)
        cat = values[self.cat]
        if cat != "kv_cache":
            self.temp_live += size
            self.temp_most = max(self.temp_most, self.temp_live)
            self.w = int(self.temp_most * self.MARGIN)
            self.w_most = max(self.w_most, self.w)
            self.size[bid] = size
            return super().alloc(bid, size, align, values)
        self.seen = True
        w = self.w_most if self.PERSIST else self.w
        bf = self.bf
        if w and self.breaks(size, align, w):
            off = align_up(bf.top, align)
            end = align_up(off + size, align)
            bf._above_top(off, end)
            bf.live[bid] = (off, end)
            bf.peak = max(bf.peak, end)
            return off
        return bf.alloc(bid, size, align, False)

    def breaks(self, size: int, align: int, w: int) -> bool:
        """Would best fit take the last free extent of at least w below the peak?"""
        bf = self.bf
        head = bf.peak - bf.top
        if head >= w:
            return False
        found = bf._find(size, align, 64)
        if found is None:
            return False  # it goes to the top anyway
        gstart = found[0]
        gsize = bf.gap_end[gstart] - gstart
        if gsize < w:
            return False
        big = [g for g, _ in bf.sizes[-2:] if g >= w]
        return len(big) == 1 and gsize - size < w

    def free(self, bid: str) -> None:
        if bid in self.size:
            self.temp_live -= self.size.pop(bid)
        super().free(bid)


class ReserveAlways(Reserve):
    PERSIST = True


class Reserve1(Reserve):
    MARGIN = 1.0


class Reserve13(Reserve):
    MARGIN = 1.3


class Split(Ties):
    """Caches first fit from the bottom; temporaries (non-cache) the highest gap that fits
    below the top (TOP_TEMPS) or best fit with high ties."""

    TOP_TEMPS = True

    def alloc(self, bid: str, size: int, align: int, values: list[str]) -> int:
        bf = self.bf
        low = values[self.cat] == "kv_cache"
        order = bf.starts if low else (reversed(bf.starts) if self.TOP_TEMPS else ())
        for s in order:
            o = align_up(s, align)
            if o + size <= bf.gap_end[s]:
                return self.carve(bid, size, align, (s, o))
        if low or self.TOP_TEMPS:
            return bf.alloc(bid, size, align, False)  # goes to the top
        return super().alloc(bid, size, align, values)


class SplitBF(Split):
    TOP_TEMPS = False


class Alternate(Ties):
    """KV caches slide: in even steps each takes the lowest gap that fits (at its start),
    in odd steps the highest (at its end), so that a step's new caches fill the holes its
    old ones leave in processing order; everything else: Ties. TEMPS_HIGH: temporaries
    the highest gap that fits."""

    TEMPS_HIGH = False

    def __init__(self, capacity: int, names: list[str]) -> None:
        super().__init__(capacity, names)
        self.step_ix = names.index("step")

    def alloc(self, bid: str, size: int, align: int, values: list[str]) -> int:
        bf = self.bf
        if values[self.cat] != "kv_cache":
            if self.TEMPS_HIGH and self.seen:
                return self.highest(bid, size, align, values)
            return super().alloc(bid, size, align, values)
        self.seen = True
        step = values[self.step_ix]
        if step == "-" or int(step) % 2 == 0:
            for s in bf.starts:
                o = align_up(s, align)
                if o + size <= bf.gap_end[s]:
                    return self.carve(bid, size, align, (s, o))
            return bf.alloc(bid, size, align, False)
        return self.highest(bid, size, align, values, at_end=True)

    def highest(self, bid, size, align, values, at_end=False) -> int:
        bf = self.bf
        for s in reversed(bf.starts):
            e = bf.gap_end[s]
            o = (e - size) // align * align if at_end else align_up(s, align)
            if o >= s and o + size <= e:
                return self.carve(bid, size, align, (s, o))
        return bf.alloc(bid, size, align, False)


class AlternateHigh(Alternate):
    TEMPS_HIGH = True


def _fit(gaps: list[int], size: int) -> int:
    """Index of the smallest gap size >= size in gaps (a plain list), or -1."""
    best = -1
    for i, g in enumerate(gaps):
        if g >= size and (best < 0 or g < gaps[best]):
            best = i
    return best


class Lookahead(Ties):
    """A large temporary's placement is chosen with its predicted companions in view: the
    previous layer of the same step, at the same position among its non-cache requests,
    shows which requests came while its counterpart was live (at least 1/8 of its size);
    those are predicted here, scaled by this request's size over its counterpart's. Each
    of the best-fitting gaps and the top is tried for this request, the companions placed
    by best fit in what remains, and the lowest resulting peak wins (ties: best fit)."""

    BIG = 1 << 20
    TRIES = 16

    def __init__(self, capacity: int, names: list[str]) -> None:
        super().__init__(capacity, names)
        self.step_ix, self.layer_ix = names.index("step"), names.index("layer")
        self.op_ix = names.index("op")
        self.key = None
        self.prev: list[tuple[str, int, list[int]]] = []  # the previous layer's
        self.cur: list[tuple[str, int, list[int]]] = []
        self.open: dict[str, int] = {}  # live id -> its index in cur (big ones)

    def alloc(self, bid: str, size: int, align: int, values: list[str]) -> int:
        if values[self.cat] == "kv_cache":
            return super().alloc(bid, size, align, values)
        key = (values[self.step_ix], values[self.layer_ix])
        if key != self.key:
            same_step = self.key is not None and key[0] == self.key[0]
            self.prev = self.cur if same_step and key[1] != "head" else []
            self.cur, self.open, self.key = [], {}, key
        for j in self.open.values():
            _, s0, comp = self.cur[j]
            if size * 8 >= s0 and len(comp) < 4:
                comp.append(size)
        idx = len(self.cur)
        self.cur.append((values[self.op_ix], size, []))
        if size >= self.BIG:
            self.open[bid] = idx
        off = None
        if size >= self.BIG and idx < len(self.prev) and self.prev[idx][0] == values[self.op_ix]:
            _, s0, comp = self.prev[idx]
            if comp:
                off = self.choose(bid, size, align, [c * size // s0 for c in comp])
        return super().alloc(bid, size, align, values) if off is None else off

    def free(self, bid: str) -> None:
        self.open.pop(bid, None)
        super().free(bid)

    def choose(self, bid: str, size: int, align: int, comp: list[int]) -> int | None:
        bf = self.bf
        head = max(0, bf.peak - bf.top)
        gaps = [(g, s) for g, s in bf.sizes if g >= size][: self.TRIES]
        base = [g for g, _ in bf.sizes if g >= min(*comp, size)]

        def peak_with(take: int | None) -> int:
            free = list(base)  # gap sizes; the head (above top) handled apart
            top_used = 0
            if take is None:
                top_used = size
            else:
                free.remove(take)
                free.append(take - size)
            for c in comp:
                i = _fit(free, c)
                if i >= 0:
                    free[i] -= c
                else:
                    top_used += c
            return max(bf.peak, bf.top + top_used) if top_used > head else bf.peak

        first = peak_with(gaps[0][0]) if gaps else peak_with(None)
        best, choice = first, (gaps[0] if gaps else None)
        for g, s in gaps[1:]:
            p = peak_with(g)
            if p < best:
                best, choice = p, (g, s)
        if peak_with(None) < best:
            choice = None
        if choice is gaps[0] if gaps else choice is None:
            return None  # best fit's own choice
        if choice is None:
            return bf.alloc(bid, size, align, False) if not gaps else self.at_top(bid, size, align)
        g, s = choice
        o = align_up(s, align)
        if o + size > s + g:
            return None
        return self.carve(bid, size, align, (s, o))

    def at_top(self, bid: str, size: int, align: int) -> int:
        bf = self.bf
        off = align_up(bf.top, align)
        end = align_up(off + size, align)
        bf._above_top(off, end)
        bf.live[bid] = (off, end)
        bf.peak = max(bf.peak, end)
        return off


class Echo(Ties):
    """Each layer of a step repeats the previous one: a non-cache request takes the offset
    its counterpart (same position among the layer's non-cache requests, same op) had one
    layer back, else two layers back (what lives across a layer boundary alternates), when
    that range is free now; else Ties. Keeps the temporaries' layout from drifting up
    layer after layer."""

    LAGS = 2
    CACHES = False

    def __init__(self, capacity: int, names: list[str]) -> None:
        super().__init__(capacity, names)
        self.step_ix, self.layer_ix = names.index("step"), names.index("layer")
        self.op_ix = names.index("op")
        self.key = None
        self.back: list[list[tuple[str, int]]] = []  # the layers before, latest first
        self.cur: list[tuple[str, int]] = []

    def alloc(self, bid: str, size: int, align: int, values: list[str]) -> int:
        kv = values[self.cat] == "kv_cache"
        if kv and not self.CACHES:
            return super().alloc(bid, size, align, values)
        key = (values[self.step_ix], values[self.layer_ix])
        if key != self.key:
            same = self.key is not None and key[0] == self.key[0] and key[1] not in ("emb", "head")
            self.back = [self.cur, *self.back][: self.LAGS] if same else []
            self.cur, self.key = [], key
        idx, op = len(self.cur), values[self.op_ix]
        for layer in self.back:
            if idx < len(layer) and layer[idx][0] == op:
                off = layer[idx][1]
                if off % align == 0 and self.bf.take(bid, off, align_up(off + size, align)):
                    self.seen |= kv
                    self.cur.append((op, off))
                    return off
        off = super().alloc(bid, size, align, values)
        self.cur.append((op, off))
        return off


class Echo1(Echo):
    LAGS = 1


class EchoAll(Echo):
    CACHES = True


class NextFit(Ties):
    """KV caches as a ring: each cache lives about one engine step and caches are
    replaced in the order they were made (layer after layer, request after request), so a
    cache goes at the first free range at or after the end of the last cache placed
    (next fit), wrapping to the bottom when nothing fits below the top; everything else:
    Ties."""

    TEMPS = "ties"

    def __init__(self, capacity: int, names: list[str]) -> None:
        super().__init__(capacity, names)
        self.head = 0

    def alloc(self, bid: str, size: int, align: int, values: list[str]) -> int:
        if values[self.cat] != "kv_cache":
            return super().alloc(bid, size, align, values)
        self.seen = True
        bf = self.bf
        k = bisect_right(bf.starts, self.head) - 1
        order = bf.starts[max(k, 0) :] + bf.starts[: max(k, 0)]
        for s in order:
            e = bf.gap_end[s]
            o = align_up(max(s, self.head) if s <= self.head < e else s, align)
            if o + size <= e:
                off = self.carve(bid, size, align, (s, o))
                break
        else:
            off = bf.alloc(bid, size, align, False)
        self.head = off + size
        return off


class NextFitTop(NextFit):
    """NextFit's caches; temporaries the highest gap that fits (away from the ring)."""

    def alloc(self, bid: str, size: int, align: int, values: list[str]) -> int:
        if values[self.cat] == "kv_cache" or not self.seen:
            return super().alloc(bid, size, align, values)
        bf = self.bf
        for s in reversed(bf.starts):
            e = bf.gap_end[s]
            o = (e - size) // align * align
            if o >= s:
                return self.carve(bid, size, align, (s, o))
        return bf.alloc(bid, size, align, False)


class CachingRow:
    """online_caching.Caching with the harness's constructor (capacity, hint names)."""

    def __new__(cls, capacity: int, _names: list[str]):
        from online_caching import Caching

        return Caching(capacity)
