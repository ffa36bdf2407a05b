"""Experiments (not shipped): policy selection by simulation (issue 35, helper `stepsel`).
See predict_notes.md, "Policy selection by simulation".

Every live KV cache is replaced once per engine step, so the layout is rebuilt each step
and a placement policy can be chosen per step, or per layer. All candidate policies
(greedy's best fit, Ties, Inverse, SplitBF, first fit, Echo, Reserve13, TopB, LowB)
work on one shared state (SplitTies plus the counters Echo and Reserve read), so that
switching is free. Each block gets a role key that does not depend on the step (a
cache: layer, request, K/V; anything else: layer, request, index among that request's
non-cache requests of the layer), so recorded events can be re-mapped onto the present.

At a decision point, each candidate plays a predicted stretch of events on its own copy
of the real state; the least predicted top wins. A top below the floor (max of the peak
so far and the bound the capacity rule gives, (capacity - 2 MiB) x 5/8) counts as the
floor; equal costs go to the PREFER order (greedy, then Ties, then CANDS).

- `StepSel`: at each step's first request; the prediction is the last step re-mapped
  (caches one token larger, the requests that left dropped, a prefill's caches replaced
  like a decode's; new requests cannot be known).
- `LayerSel2`: also at each layer boundary from layer 1 on; the prediction is the layer
  just finished replayed as the next 2 layers (caches and temporaries shifted by layer).
- `LayerSel2P`: also at layer 0, from the last step's layer 0 with its batch temporaries
  scaled by the ratio of the two steps' `embedding` sizes (a prefill step shows there).
- `...T`: Ties before the first decision and first among equal costs.

    python benchmarks/online_lab/harness.py --seeds 12 cold_variants:Ties \
        stepsel_variants:StepSel stepsel_variants:LayerSel2 stepsel_variants:LayerSel2P

How often each policy was chosen is printed to stderr at exit.
"""

from __future__ import annotations

import atexit

from online_greedy import SCAN, align_up
from ties import SplitTies

MiB = 1 << 20


class State:
    """The layout (SplitTies) plus what Echo and Reserve remember; copied for a sim."""

    def __init__(self, capacity: int) -> None:
        self.bf = SplitTies(capacity)
        self.seen = False
        # Echo: (step, layer) key, the layers before (latest first), this layer's list
        self.ekey = None
        self.eback: list[list[tuple[str, int]]] = []
        self.ecur: list[tuple[str, int]] = []
        # Reserve
        self.rstep = None
        self.temp_live = 0
        self.temp_most = 0
        self.w = 0
        self.tsize: dict[str, int] = {}
        # role keys of live blocks
        self.bykey: dict[tuple, list[str]] = {}
        self.keyof: dict[str, tuple] = {}

    def copy(self) -> State:
        n = State.__new__(State)
        b, o = SplitTies.__new__(SplitTies), self.bf
        b.capacity, b.top, b.peak = o.capacity, o.top, o.peak
        b.gap_end, b.gap_start = dict(o.gap_end), dict(o.gap_start)
        b.sizes, b.starts, b.live = list(o.sizes), list(o.starts), dict(o.live)
        n.bf = b
        n.seen = self.seen
        n.ekey, n.eback, n.ecur = self.ekey, [list(x) for x in self.eback], list(self.ecur)
        n.rstep, n.temp_live, n.temp_most, n.w = self.rstep, self.temp_live, self.temp_most, self.w
        n.tsize = dict(self.tsize)
        n.bykey = {k: list(v) for k, v in self.bykey.items()}
        n.keyof = dict(self.keyof)
        return n


def carve(st: State, bid: str, size: int, align: int, gstart: int, off: int) -> int:
    bf = st.bf
    end = min(align_up(off + size, align), bf.gap_end[gstart])
    bf._carve(gstart, off, end)
    bf.live[bid] = (off, end)
    bf.peak = max(bf.peak, end)
    return off


def at_top(st: State, bid: str, size: int, align: int) -> int:
    bf = st.bf
    off = align_up(bf.top, align)
    end = align_up(off + size, align)
    bf._above_top(off, end)
    bf.live[bid] = (off, end)
    bf.peak = max(bf.peak, end)
    return off


def first_fit(st: State, bid: str, size: int, align: int) -> int:
    bf = st.bf
    for s in bf.starts:
        o = align_up(s, align)
        if o + size <= bf.gap_end[s]:
            return carve(st, bid, size, align, s, o)
    return bf.alloc(bid, size, align, False)


# policies: (state, bid, size, align, kv, op, B) -> offset
def p_greedy(st, bid, size, align, kv, op, _b):
    return st.bf.alloc(bid, size, align, False)


def p_ties(st, bid, size, align, kv, op, _b):
    return st.bf.alloc(bid, size, align, not kv and st.seen)


def p_inverse(st, bid, size, align, kv, op, _b):
    return st.bf.alloc(bid, size, align, kv)


def p_splitbf(st, bid, size, align, kv, op, b):
    return first_fit(st, bid, size, align) if kv else p_ties(st, bid, size, align, kv, op, b)


def p_firstfit(st, bid, size, align, kv, op, _b):
    return first_fit(st, bid, size, align)


def p_echo(st, bid, size, align, kv, op, b):
    if not kv:
        idx = len(st.ecur)
        for layer in st.eback:
            if idx < len(layer) and layer[idx][0] == op:
                off = layer[idx][1]
                if off % align == 0 and st.bf.take(bid, off, align_up(off + size, align)):
                    return off
    return p_ties(st, bid, size, align, kv, op, b)


def p_reserve13(st, bid, size, align, kv, op, b):
    if not kv:
        return p_ties(st, bid, size, align, kv, op, b)
    bf, w = st.bf, int(st.temp_most * 1.3)
    if w and _breaks(bf, size, align, w):
        return at_top(st, bid, size, align)
    return bf.alloc(bid, size, align, False)


def _breaks(bf, size, align, w) -> bool:
    if bf.peak - bf.top >= w:
        return False
    found = bf._find(size, align, SCAN)
    if found is None:
        return False
    gsize = bf.gap_end[found[0]] - found[0]
    if gsize < w:
        return False
    big = [g for g, _ in bf.sizes[-2:] if g >= w]
    return len(big) == 1 and gsize - size < w


def p_topb(st, bid, size, align, kv, op, b):
    """Caches go above the top while that stays under the bound (free room), else Ties."""
    if kv and align_up(st.bf.top, align) + size <= b:
        return at_top(st, bid, size, align)
    return p_ties(st, bid, size, align, kv, op, b)


def p_lowb(st, bid, size, align, kv, op, b):
    """First fit while the end stays under the bound, else Ties."""
    bf = st.bf
    for s in bf.starts:
        o = align_up(s, align)
        if o + size > b:
            break
        if o + size <= bf.gap_end[s]:
            return carve(st, bid, size, align, s, o)
    o = align_up(bf.top, align)
    if o + size <= b:
        return at_top(st, bid, size, align)
    return p_ties(st, bid, size, align, kv, op, b)


POLICIES = {
    "greedy": p_greedy,
    "ties": p_ties,
    "inverse": p_inverse,
    "splitbf": p_splitbf,
    "firstfit": p_firstfit,
    "echo": p_echo,
    "reserve13": p_reserve13,
    "topb": p_topb,
    "lowb": p_lowb,
}


def place(st: State, pol, bid, size, align, kv, op, step, layer, b) -> int:
    """Run policy `pol` for one request and update the shared memory of the state."""
    if not kv:  # Reserve's per-step counters (before placing, as Reserve does)
        if step != "-" and step != st.rstep:
            st.rstep, st.temp_most = step, st.temp_live
        st.temp_live += size
        st.temp_most = max(st.temp_most, st.temp_live)
        st.tsize[bid] = size
        key = (step, layer)
        if key != st.ekey:
            same = st.ekey is not None and step == st.ekey[0] and layer not in ("emb", "head")
            st.eback = [st.ecur, *st.eback][:2] if same else []
            st.ecur, st.ekey = [], key
    off = pol(st, bid, size, align, kv, op, b)
    st.seen |= kv
    if not kv:
        st.ecur.append((op, off))
    return off


def release(st: State, bid: str) -> None:
    sz = st.tsize.pop(bid, None)
    if sz is not None:
        st.temp_live -= sz
    st.bf.free(bid)
    key = st.keyof.pop(bid, None)
    if key is not None:
        lst = st.bykey[key]
        lst.remove(bid)
        if not lst:
            del st.bykey[key]


class StepSel:
    """Chooses a policy per engine step by simulating the previous step re-mapped."""

    CANDS = ("greedy", "ties", "inverse", "splitbf", "echo", "reserve13", "firstfit", "topb",
             "lowb")  # fmt: skip
    PREFER = ("greedy", "ties")  # ties of the predicted cost: these first, then CANDS order
    FIRST = "greedy"  # policy before the first decision
    SECONDARY = False  # among equal costs, the least raw predicted top
    PER_LAYER = 0  # re-decide at each layer boundary, simulating this many layers ahead
    STEP = True  # decide at each step's start from the previous step
    LAYER0 = False  # decide at layer 0 from the last step's layer 0, scaled by the tokens

    def __init__(self, capacity: int, names: list[str]) -> None:
        self.st = State(capacity)
        ix = names.index
        self.cat, self.op, self.lay = ix("category"), ix("op"), ix("layer")
        self.req, self.stp = ix("request"), ix("step")
        self.b = (capacity - 2 * MiB) * 5 // 8  # the bound is at least this (capacity rule)
        self.pol = self.FIRST
        self.step = None
        self.rec: list = []  # this step's events
        self.recidx: dict[str, int] = {}  # bid allocated in this step -> its event index
        self.cnt: dict[tuple, int] = {}  # role counters of this step
        self.delta: dict[str, int] = {}  # request -> a cache's growth per step
        self.order = [p for p in self.PREFER if p in self.CANDS] + [
            p for p in self.CANDS if p not in self.PREFER
        ]
        self.chosen: list[str] = []
        self.layer = None
        self.prev: tuple[list, dict[str, int]] = ([], {})  # the last step's rec, lstart
        self.lstart: dict[str, int] = {}  # layer -> its first event index in rec
        self.nlayers = 0

    def role(self, kv: bool, layer: str, r: str, step: str) -> tuple:
        c = ("kv" if kv else "t", layer, r)
        j = self.cnt.get(c, 0)
        self.cnt[c] = j + 1
        return (*c, j)

    def alloc(self, bid: str, size: int, align: int, values: list[str]) -> int:
        step = values[self.stp]
        if step != "-" and step != self.step:
            if self.step is not None and self.STEP:
                self.decide(self.predicted(), "sim")
            self.prev = (self.rec, self.lstart)
            self.step, self.rec, self.recidx, self.cnt = step, [], {}, {}
            self.layer, self.lstart = None, {}
        kv = values[self.cat] == "kv_cache"
        layer, r, op = values[self.lay], values[self.req], values[self.op]
        if step == "-":
            self.nlayers = max(self.nlayers, int(layer) + 1)
        elif layer != self.layer:
            self.lstart[layer] = len(self.rec)
            if self.PER_LAYER and layer.isdigit() and int(layer) >= 1:
                self.decide(self.replicated(int(layer)), step)
            elif self.LAYER0 and layer == "0":
                self.decide(self.layer0(), step)
            self.layer = layer
        st = self.st
        key = self.role(kv, layer, r, step)
        grow = 0
        if kv and op == "cat":
            old = st.bykey.get(key)
            if old:
                o0, o1 = st.bf.live[old[0]]
                grow = max(0, size - (o1 - o0))
                self.delta[r] = grow
        off = place(st, POLICIES[self.pol], bid, size, align, kv, op, step, layer, self.b)
        st.keyof[bid] = key
        st.bykey.setdefault(key, []).append(bid)
        if step != "-":
            self.recidx[bid] = len(self.rec)
            self.rec.append(("a", key, size, align, kv, op, layer, r))
        return off

    def free(self, bid: str) -> None:
        if self.step is not None:
            j = self.recidx.pop(bid, None)
            if j is not None:
                self.rec.append(("fi", j))
            else:
                self.rec.append(("fp", self.st.keyof.get(bid)))
        release(self.st, bid)

    # the prediction
    def predicted(self) -> list:
        """The last step's events re-mapped onto now: ('a', key, size, align, kv, op,
        layer) / ('fi', event index) / ('fp', key)."""
        st = self.st
        alive = {k[2] for k in st.bykey if k[0] == "kv"}
        out, skipped = [], set()
        for j, e in enumerate(self.rec):
            if e[0] == "a":
                _, key, size, align, kv, op, layer, r = e
                if r != "-" and r not in alive:
                    skipped.add(j)
                    continue
                if kv:
                    size += self.delta.get(r, 0)
                out.append(("a", key, size, align, kv, op, layer, j))
                if kv and op != "cat" and key[3] % 2 == 1:  # a prefill: replace like a decode
                    out.append(("fp", (*key[:3], key[3] - 1)))
                    out.append(("fp", key))
            elif e[0] == "fi":
                if e[1] not in skipped:
                    out.append(e)
            elif e[1] is not None:
                out.append(e)
        return out

    def replicated(self, lay: int) -> list:
        """Layer lay-1 of this step replayed as layers lay, lay+1, ... (PER_LAYER of them,
        not past the last layer). Event ids are (replica, index in rec)."""
        prev = str(lay - 1)
        if prev not in self.lstart:
            return []
        base = self.lstart[prev]
        out = []
        for rep, k in enumerate(range(lay, min(self.nlayers, lay + self.PER_LAYER))):
            sk = str(k)
            for j in range(base, len(self.rec)):
                e = self.rec[j]
                if e[0] == "a":
                    _, key, size, align, kv, op, _layer, _r = e
                    nk = (key[0], sk, *key[2:]) if key[1] == prev else key
                    out.append(("a", nk, size, align, kv, op, sk, (rep, j)))
                elif e[0] == "fi":
                    if e[1] >= base:
                        out.append(("fi", (rep, e[1])))
                    else:  # made in an earlier layer: its counterpart one layer down
                        key = self.rec[e[1]][1]
                        if key[1].isdigit():
                            key = (key[0], str(int(key[1]) + rep + 1), *key[2:])
                        out.append(("fp", key))
                elif e[1] is not None:
                    key = e[1]
                    if key[1] == prev:
                        key = (key[0], sk, *key[2:])
                    out.append(("fp", key))
        return out

    def layer0(self) -> list:
        """The last step's layer 0 re-mapped onto now: caches of the requests still here
        one token larger, batch temporaries scaled by the ratio of the two steps'
        `embedding` outputs (the token count)."""
        rec, lstart = self.prev
        if "0" not in lstart:
            return []

        def emb(r):
            return next((e[2] for e in r if e[0] == "a" and e[5] == "embedding"), 0)

        now, then = emb(self.rec), emb(rec)
        f = now / then if now and then else 1.0
        base = lstart["0"]
        end = lstart.get("1", len(rec))
        alive = {k[2] for k in self.st.bykey if k[0] == "kv"}
        out, skipped = [], set()
        for j in range(base, end):
            e = rec[j]
            if e[0] == "a":
                _, key, size, align, kv, op, layer, r = e
                if r != "-" and r not in alive:
                    skipped.add(j)
                    continue
                if kv:
                    size += self.delta.get(r, 0)
                elif r == "-":
                    size = max(1, int(size * f))
                out.append(("a", key, size, align, kv, op, layer, j))
                if kv and op != "cat" and key[3] % 2 == 1:
                    out.append(("fp", (*key[:3], key[3] - 1)))
                    out.append(("fp", key))
            elif e[0] == "fi":
                if e[1] >= base and e[1] not in skipped:
                    out.append(e)
                elif e[1] < base:
                    out.append(("fp", rec[e[1]][1]))
            elif e[1] is not None:
                out.append(e)
        return out

    def simulate(self, name: str, events: list, step: str = "sim") -> int:
        st = self.st.copy()
        pol, b = POLICIES[name], self.b
        made: dict[int, str] = {}
        top = 0
        for n, e in enumerate(events):
            if e[0] == "a":
                _, key, size, align, kv, op, layer, j = e
                bid = f"s{n}"
                off = place(st, pol, bid, size, align, kv, op, step, layer, b)
                top = max(top, off + size)
                made[j] = bid
                st.keyof[bid] = key
                st.bykey.setdefault(key, []).append(bid)
            elif e[0] == "fi":
                bid = made.pop(e[1], None)
                if bid is not None:
                    release(st, bid)
            else:
                lst = st.bykey.get(e[1])
                if lst:
                    release(st, lst[0])
        return top

    def decide(self, events: list, step: str) -> None:
        if not events:
            return
        floor = max(self.st.bf.peak, self.b)
        best = None
        for name in self.order:
            top = self.simulate(name, events, step)
            score = (max(top, floor), top if self.SECONDARY else 0)
            if best is None or score < best[0]:
                best = (score, name)
        self.pol = best[1]
        self.chosen.append(self.pol)
        counts = _STATS.setdefault(type(self).__name__, {})
        counts[self.pol] = counts.get(self.pol, 0) + 1


class StepSelSec(StepSel):
    SECONDARY = True


class StepSelTies(StepSel):
    FIRST = "ties"
    PREFER = ("ties", "greedy")


class LayerSel2(StepSel):
    PER_LAYER = 2


class LayerSel4(StepSel):
    PER_LAYER = 4


class LayerSel4Sec(StepSel):
    PER_LAYER = 4
    SECONDARY = True


def _report() -> None:
    import sys

    for cls, counts in sorted(_STATS.items()):
        total = sum(counts.values()) or 1
        cells = " ".join(f"{k} {v} ({100 * v / total:.0f}%)" for k, v in sorted(counts.items()))
        print(f"stepsel choices, {cls}: {cells}", file=sys.stderr)


_STATS: dict[str, dict[str, int]] = {}
atexit.register(_report)


class LayerSel2T(LayerSel2):
    FIRST = "ties"
    PREFER = ("ties", "greedy")


class LayerSel2Sec(LayerSel2):
    SECONDARY = True


class LayerSel2P(LayerSel2):
    LAYER0 = True


class LayerSel2PT(LayerSel2P):
    FIRST = "ties"
    PREFER = ("ties", "greedy")
