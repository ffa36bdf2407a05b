"""Experiments (not shipped): model-predictive placement for online-serve (issue 35).

For a request, a few candidate offsets are tried (Ties' best fit, the next best-fitting
gaps, the lowest fitting gap, the top); for each, the predicted rest of the current
decoder layer and the next HORIZON layers of the engine step are simulated with Ties'
own best fit, and the candidate with the lowest predicted peak wins. A peak below the
bound's floor F = (capacity - 2 MiB) / 1.6 (the capacity rule: the peak is never below
it) counts as F; ties go to Ties' answer.

The prediction: the layers of one engine step repeat (the same requests, the same caches
grown by one token, the same temporaries), so the previous layer's event sequence (allocs
and frees, in order) is the template for the rest of this one and the layers after it.
A free in the template is mapped by what it freed: a block made d layers before the
template's layer at its position i (a temporary living across the layer boundary, or a
new cache) maps to the block d layers before the predicted layer at position i (real when
that layer has already run, else simulated); the old cache of a request (made in an
earlier step) to the same request's old cache of the predicted layer, by its order among
those still live. Temporaries that serve the whole batch are scaled by the current
request's size over its counterpart's in the template (hidden-like cases scale runs of
ops between layers); caches and per-request temporaries keep the template's sizes.

    python benchmarks/online_lab/harness.py --seeds 12 mpc_variants:MPC

Cost: about one rollout per decision (the base answer is usually predicted free of cost,
and then no other choice is tried); no rollout is reused between requests. Figures and
verdict: predict_notes.md, "Model-predictive placement".
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

from cold_variants import Ties
from online_greedy import align_up
from ties import SplitTies

MiB = 1 << 20


class Sim(SplitTies):
    """A copy of a SplitTies' free space (gaps, top, peak) for a rollout."""

    def __init__(self, bf: SplitTies) -> None:  # no super().__init__: a copy
        self.capacity = bf.capacity
        self.top = bf.top
        self.gap_end = dict(bf.gap_end)
        self.gap_start = dict(bf.gap_start)
        self.sizes = list(bf.sizes)
        self.starts = list(bf.starts)
        self.live = {}
        self.peak = bf.peak

    def put(self, off: int, end: int) -> None:
        """Reserve [off, end), known to be free."""
        if off >= self.top:
            self._above_top(off, end)
        else:
            gstart = self.starts[bisect_right(self.starts, off) - 1]
            gend = self.gap_end[gstart]
            if end > gend:
                self._drop_gap(gstart)
                self._add_gap(gstart, off)
                self.top = end
            else:
                self._carve(gstart, off, end)
        self.peak = max(self.peak, end)

    def free_range(self, start: int, end: int) -> None:
        if end in self.gap_end:
            end = self._drop_gap(end)
        if start in self.gap_start:
            start = self.gap_start[start]
            self._drop_gap(start)
        if end >= self.top:
            self.top = start
        else:
            self._add_gap(start, end)

    def place(self, size: int, align: int, high: bool) -> tuple[int, int]:
        self.alloc("", size, align, high)
        return self.live.pop("")


class MPC(Ties):
    MIN_SIZE = MiB  # requests below this are Ties' (no rollout)
    CACHES = False  # also decide KV caches' offsets by rollouts
    CACHE_MIN = MiB  # ... those of at least this size
    HORIZON = 1  # layers after the current one simulated
    TRIES = 4  # best-fitting gaps tried (the first is Ties' answer)
    LOWEST = True  # also try the lowest fitting gap
    TOP = True  # also try the top
    USE_FLOOR = True
    TAIL = False  # layer 0: the last layer's batch-wide tail as the template
    FROM_LAYER = 1
    SURE = 0.0  # least predicted gain (x floor) for leaving the base's answer
    HIGH_TIES = True  # False: plain best fit (greedy) as the base policy and in rollouts

    def __init__(self, capacity: int, names: list[str]) -> None:
        super().__init__(capacity, names)
        ix = names.index
        self.op_ix, self.layer_ix, self.step_ix = ix("op"), ix("layer"), ix("step")
        self.floor = int((capacity - 2 * MiB) / 1.6) if self.USE_FLOOR else 0
        self.step: str | None = None
        self.layer = -1  # current numbered layer of this step (-1: emb/head/none)
        self.events: dict[int, list[tuple]] = {}  # layer -> this step's events
        self.ids: dict[int, list[str]] = {}  # layer -> this step's alloc ids, in order
        self.info: dict[str, tuple] = {}  # live id -> (step, layer, idx, cat, req)
        self.kv: dict[tuple[str, int], list[str]] = {}  # (req, layer) -> live cache ids
        self.freed: set[str] = set()
        self.n_layers = 0
        self.last_full: list[tuple] = []  # the last complete layer's events (any step)
        self.op_now = ""
        self.rollouts = 0
        self.decisions = 0
        self.changed = 0

    # bookkeeping -----------------------------------------------------------------
    def _enter(self, values: list[str]) -> None:
        step, layer = values[self.step_ix], values[self.layer_ix]
        if step != "-" and step != self.step:
            if self.layer >= 0:
                self.last_full = self.events[self.layer]
            self.step, self.events, self.ids, self.layer = step, {}, {}, -1
        num = layer.isdigit()
        if num and int(layer) + 1 > self.n_layers and step == "-":
            self.n_layers = int(layer) + 1
        if step == "-":
            return
        lay = int(layer) if num else -1
        if lay != self.layer:
            if self.layer >= 0:
                self.last_full = self.events[self.layer]
            self.layer = lay
            if lay >= 0:
                self.n_layers = max(self.n_layers, lay + 1)
                self.events.setdefault(lay, [])
                self.ids.setdefault(lay, [])

    def _ref(self, bid: str):
        """How the template refers to a freed block."""
        st, lay, idx, cat, req = self.info[bid]
        if st == self.step and lay >= 0 and self.layer >= 0:
            return (0, self.layer - lay, idx)
        if cat == "kv_cache" and st != self.step and lay == self.layer and self.layer >= 0:
            olds = [b for b in self.kv.get((req, lay), ()) if self.info[b][0] != self.step]
            return (1, req, olds.index(bid))
        return None

    def alloc(self, bid: str, size: int, align: int, values: list[str]) -> int:
        self._enter(values)
        cat, req = values[self.cat], values[self.req]
        off = None
        min_size = self.MIN_SIZE if cat != "kv_cache" else (self.CACHE_MIN if self.CACHES else -1)
        big = size >= min_size >= 0
        self.op_now = values[self.op_ix]
        if self.layer >= self.FROM_LAYER and self.step is not None and big:
            off = self.decide(bid, size, align, cat, req, big)
        if off is None:
            off = super().alloc(bid, size, align, values)
        self.seen |= cat == "kv_cache"
        lay_num = values[self.layer_ix]
        lay = int(lay_num) if lay_num.isdigit() else -1
        st = values[self.step_ix]
        if st != "-" and self.layer >= 0:
            ev = (0, size, cat, req, len(self.ids[self.layer]), values[self.op_ix])
            self.events[self.layer].append(ev)
            self.ids[self.layer].append(bid)
            self.info[bid] = (st, self.layer, len(self.ids[self.layer]) - 1, cat, req)
        else:
            self.info[bid] = (st, lay, -1, cat, req)
        if cat == "kv_cache" and lay >= 0:
            self.kv.setdefault((req, lay), []).append(bid)
        return off

    def free(self, bid: str) -> None:
        if self.step is not None and self.layer >= 0 and bid in self.info:
            self.events[self.layer].append((1, self._ref(bid)))
        info = self.info.pop(bid, None)
        if info is not None and info[3] == "kv_cache" and info[1] >= 0:
            lst = self.kv.get((info[4], info[1]))
            if lst is not None and bid in lst:
                lst.remove(bid)
        super().free(bid)

    # prediction ------------------------------------------------------------------
    def decide(self, bid, size, align, cat, req, big) -> int | None:
        lay = self.layer
        cur = self.events[lay]
        p = len(cur)
        tmpl = self.events.get(lay - 1)
        segs = None
        if tmpl and p < len(tmpl) and tmpl[p][0] == 0:
            t = tmpl[p]
            if t[2] == cat and t[3] == req and t[5] == self.op_now:
                last = min(self.n_layers - 1, lay + self.HORIZON)
                segs = [(lay, tmpl, p + 1, len(self.ids[lay]) - t[4])]
                segs += [(L, tmpl, 0, 0) for L in range(lay + 1, last + 1)]
        if segs is None and lay == 0 and self.TAIL and req == "-":
            segs, t = self.tail_plan(cat)
        if segs is None:
            return None
        self.decisions += 1
        scale = size / t[1] if cat != "kv_cache" and req == "-" else 1.0
        bf = self.bf
        high = self.high(cat)
        cands = self.candidates(size, align, high)
        base = cands[0]
        best, best_c, base_got = None, None, None
        for c in cands:
            got = self.rollout(c, align, segs, scale, best)
            if got is None:
                continue
            got = max(got, self.floor)
            if c == base:
                base_got = got
            if best is None or got < best:
                best, best_c = got, c
            if best <= max(bf.peak, self.floor) and c == base:
                break  # Ties' answer is already free of cost
        if best_c is None or best_c == base:
            return None
        if self.SURE and base_got is not None and base_got - best < self.SURE * self.floor:
            return None  # a predicted gain this small is within the prediction's error
        self.changed += 1
        off, end = best_c
        if not bf.take(bid, off, end):
            raise AssertionError("candidate not free")
        bf.live[bid] = (off, end)
        return off

    def candidates(self, size: int, align: int, high: bool) -> list[tuple[int, int]]:
        """(offset, end) choices, Ties' answer first."""
        bf = self.bf
        probe = Sim(bf)
        off, end = probe.place(size, align, high)
        out = [(off, end)]
        seen_g = set()
        for gsize, gstart in bf.sizes[bisect_left(bf.sizes, (size, -1)) :]:
            if len(out) >= self.TRIES:
                break
            o = align_up(gstart, align)
            if o + size > gstart + gsize or gstart in seen_g:
                continue
            seen_g.add(gstart)
            e = min(align_up(o + size, align), gstart + gsize)
            if (o, e) not in out:
                out.append((o, e))
            # the high end of the gap too
            o2 = (gstart + gsize - size) // align * align
            if o2 > o and (o2, o2 + size) not in out and len(out) < self.TRIES:
                out.append((o2, min(align_up(o2 + size, align), gstart + gsize)))
        if self.LOWEST:
            for s in bf.starts:
                o = align_up(s, align)
                if o + size <= bf.gap_end[s]:
                    e = min(align_up(o + size, align), bf.gap_end[s])
                    if (o, e) not in out:
                        out.append((o, e))
                    break
        if self.TOP:
            o = align_up(bf.top, align)
            if (o, align_up(o + size, align)) not in out:
                out.append((o, align_up(o + size, align)))
        return out

    def tail_plan(self, cat):
        """Layer 0: the batch-wide tail of the last complete layer, aligned on this layer's
        batch-wide tail so far."""
        T, cur = self.last_full, self.events[self.layer]
        tc = max((i + 1 for i, e in enumerate(cur) if e[0] == 0 and e[3] != "-"), default=0)
        tt = max((i + 1 for i, e in enumerate(T) if e[0] == 0 and e[3] != "-"), default=0)
        if tc == 0 or tt == 0:
            return None, None
        k = len(cur) - tc
        if tt + k >= len(T):
            return None, None
        for a, b in zip(cur[tc:], T[tt : tt + k], strict=True):
            if a[0] != b[0] or (a[0] == 0 and (a[5] != b[5] or a[3] != b[3])):
                return None, None
        t = T[tt + k]
        if t[0] != 0 or t[2] != cat or t[5] != self.op_now:
            return None, None
        return [(self.layer, T, tt + k + 1, len(self.ids[self.layer]) - t[4])], t

    def rollout(self, cand, align, segs, scale, bound) -> int | None:
        """Predicted peak with the current request at cand; None once above bound."""
        self.rollouts += 1
        bf, lay = self.bf, self.layer
        sim = Sim(bf)
        sim.put(*cand)
        simb: dict[tuple[int, int], tuple[int, int]] = {(lay, len(self.ids[lay])): cand}
        stop = bound
        for L, tmpl, start, shift in segs:
            n_alloc = len(self.ids[lay]) + 1 if lay == L else 0
            used_old: dict[str, set] = {}
            for ev in tmpl[start:]:
                if ev[0] == 0:
                    _, sz, cat, req, _i, _op = ev
                    if cat != "kv_cache" and req == "-":
                        sz = max(512, int(sz * scale))
                    high = self.HIGH_TIES and cat != "kv_cache"
                    got = sim.place(sz, align, high)
                    simb[(L, n_alloc)] = got
                    n_alloc += 1
                    if stop is not None and sim.peak > stop:
                        return None
                else:
                    ref = ev[1]
                    if ref is None:
                        continue
                    if ref[0] == 0:
                        key = (L - ref[1], ref[2] + (shift if ref[1] == 0 else 0))
                        rng = simb.pop(key, None)
                        if rng is None:
                            ids = self.ids.get(key[0])
                            if ids is None or key[1] >= len(ids) or key[0] > lay:
                                continue
                            b = ids[key[1]]
                            if b not in bf.live or (0, b) in simb:
                                continue
                            simb[(0, b)] = (0, 0)  # freed in the sim
                            rng = bf.live[b]
                        sim.free_range(*rng)
                    else:
                        _, req, j = ref
                        olds = [
                            b
                            for b in self.kv.get((req, L), ())
                            if self.info[b][0] != self.step and b not in used_old.get(req, ())
                        ]
                        if j < len(olds):
                            b = olds[j]
                            used_old.setdefault(req, set()).add(b)
                            sim.free_range(*bf.live[b])
        return sim.peak


class MPCCache(MPC):
    CACHES = True


class MPC0(MPC):
    HORIZON = 0


class MPCAll(MPC):
    HORIZON = 40


class MPCTail(MPC):
    TAIL = True
    FROM_LAYER = 0


class MPC3(MPC):
    HORIZON = 3


class MPCCacheAll(MPC):
    CACHES = True
    CACHE_MIN = 0


class MPC8(MPC):
    HORIZON = 8


class MPCG(MPC):
    """MPC on greedy's plain best fit (no tie split): where no rollout finds a lower
    predicted peak, it answers exactly as greedy."""

    HIGH_TIES = False

    def high(self, cat: str) -> bool:
        self.seen |= cat == "kv_cache"
        return False


class MPCG3(MPCG):
    HORIZON = 3


class MPCGWide(MPCG):
    """More decisions and choices: temporaries from 256 KiB, 8 best-fitting choices."""

    MIN_SIZE = MiB // 4
    TRIES = 8


class MPCGSure(MPCG):
    SURE = 0.005
