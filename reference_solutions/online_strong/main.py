#!/usr/bin/env python3
"""Strong online allocator: learns the iteration while it allocates; Python 3.11, numpy.

Policy.
1. Online best fit for every request that no plan covers (ties.SplitTies: best fit;
   once KV caches are seen, the short-lived take the highest of equally good gaps). It
   also keeps the true occupancy, so a planned offset is answered only when it is free
   at that moment (never an invalid answer).
2. Adam's state gets its room above the parameters (room.py), so it does not scatter
   through the holes of the first iteration.
3. Iterations: a hint named `iteration` (else `step`) splits the trace where its value
   changes (`-` belongs to the running iteration). Each iteration is recorded as a
   template: per request its signature (every hint but the iteration's), size,
   alignment, micro-batch, and when it was freed, counted in requests since the
   iteration began (so iterations whose frees drift still line up).
4. When an iteration starts, the template it will follow is guessed (the iteration that
   came after the last occurrence of the previous one's pattern, so alternating
   patterns are followed; else the previous one) and planned offline (place.py,
   placer.cpp: largest / longest-lived first, each at the lowest offset clear of
   everything overlapping in time, plus randomized orders while the time budget lasts)
   around the blocks live now, as fixed obstacles.
5. Request by request the iteration is matched against the template by position: same
   signature, and the same size or, for a micro-batch's token-dependent tensors, the
   template's times that micro-batch's factor (factors.py: iterations with other
   sequence lengths). A matching request takes its planned offset if it is free, else
   best fit answers. When a micro-batch first shows its factor (or a request outgrows
   its slot) the rest is planned again with the sizes now predicted; micro-batches not
   seen yet are placed last, on top. A request of another signature looks for another
   template with the same prefix (planned again from there); when there is none, the
   rest of the iteration goes by best fit.
6. Guards: a plan that would raise the peak so far is followed only when it comes within
   3 % of its own lower bound or below the peak that best fit would reach on the same
   predicted requests (a copy of the allocator replays them); else the template is
   still followed (factors learnt) but answered by best fit until the next plan. Only
   what the template freed within itself is planned. Once a followed guess failed in
   its first half, only patterns seen twice are followed. Planning takes at most a
   fifth of the time limit, shared by the iterations to come.

Without an iteration hint (and without `step`) the allocator is best fit. Measured:
benchmarks/online_calibration.py.

Protocol (judge/types/online/README.md): reads `capacity`, `hints`, then `a ID SIZE
ALIGNMENT HINTS...` (answer one offset line, flushed) and `f ID` lines until `end`.
"""

from __future__ import annotations

import copy
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # online_greedy.py: beside (archive) or above

from factors import Factors, scaled  # noqa: E402
from online_greedy import align_up, serve  # noqa: E402
from place import INF, plan  # noqa: E402
from room import AdamRoom  # noqa: E402
from ties import SplitTies  # noqa: E402

MARKERS = ("iteration", "step")
KEEP = 6  # templates remembered
REPLANS = 16  # template switches and outgrown slots re-planned per iteration
MISSES = 1  # wrong guesses before only confirmed patterns are followed
SANE = 1.03  # a plan above the peak so far must be this close to its own bound
START_S = 0.3  # search seconds, at most, of an iteration's first plan
PLAN_SHARE = 0.2  # of the time limit (12 s assumed without case.json)


def case_limits() -> tuple[float, int]:
    """(time limit in s, events) from case.json; (0, 0) when it is not there."""
    try:
        case = json.loads((Path(os.environ["MEMORACE_CASE_DIR"]) / "case.json").read_text())
        return float(case["time_limit_s"]), int(case["events"])
    except (KeyError, OSError, ValueError, TypeError):
        return 0.0, 0


class Iteration:
    """One iteration's requests; times are request positions within it."""

    def __init__(self) -> None:
        self.sigs: list[tuple] = []
        self.size: list[int] = []
        self.align: list[int] = []
        self.end: list[int] = []  # position count when freed; INF if not in it
        self.scaled: list[bool] = []  # token-dependent: scales with its micro-batch
        self.mb: list[str] = []
        self.key = 0  # hash of the signature sequence, set when it ends

    def add(self, sig: tuple, size: int, align: int, scaled: bool, mb: str) -> int:
        self.sigs.append(sig)
        self.size.append(size)
        self.align.append(align)
        self.end.append(INF)
        self.scaled.append(scaled)
        self.mb.append(mb)
        return len(self.sigs) - 1


class Strong:
    def __init__(self, capacity: int, names: list[str]) -> None:
        self.bf = SplitTies(capacity)
        self.room = AdamRoom(self.bf)
        self.factors = Factors()
        found = [names.index(m) for m in MARKERS if m in names]
        self.marker = found[0] if found else None
        self.cat = names.index("category") if "category" in names else None
        self.mbx = names.index("microbatch") if "microbatch" in names else None
        self.kv_seen = False
        self.event = 0
        self.value: str | None = None
        self.cur: Iteration | None = None
        self.templates: list[Iteration] = []
        self.history: list[int] = []  # keys of ended iterations, in order
        self.where: dict[str, tuple[Iteration, int]] = {}  # live id -> (iteration, pos)
        self.tpl: Iteration | None = None  # the template being followed
        self.slot: dict[int, tuple[int, int]] = {}  # template position -> (offset, room)
        self.replans = 0
        self.misses = 0  # followed plans left in their first half
        self.planning_s = 0.0
        self.allowance = 0.0  # planning_s may reach this within the running iteration
        self.clock = time.monotonic()
        self.limit_s, self.events = case_limits()

    # the protocol
    def alloc(self, bid: str, size: int, align: int, values: list[str]) -> int:
        cat = values[self.cat] if self.cat is not None else None
        mb = values[self.mbx] if self.mbx is not None else "-"
        self.kv_seen |= cat == "kv_cache"
        off = self.room.before(bid, size, align, cat)
        if self.marker is not None and values[self.marker] not in ("-", self.value):
            if self.value is not None:
                self.room.close()  # the first iteration is over
            self.begin(values[self.marker])
        shares = off is None and self.room.shares(cat, mb)
        if shares:
            self.room.release()
        if self.cur is not None:
            sig = tuple(v for k, v in enumerate(values) if k != self.marker)
            if off is None:
                off = self.follow(bid, sig, size, align)
            pos = self.cur.add(sig, size, align, scaled(cat, mb, size), mb)
            self.where[bid] = (self.cur, pos)
        if off is None:
            off = self.bf.alloc(bid, size, align, self.kv_seen and cat != "kv_cache")
        if shares:
            self.room.hold()
        self.event += 1
        return off

    def free(self, bid: str) -> None:
        reopens = self.room.covers(bid)
        self.bf.free(bid)
        if reopens:
            self.room.hold()
        found = self.where.pop(bid, None)
        if found is not None and found[0] is self.cur:
            self.cur.end[found[1]] = len(self.cur.sigs)
        self.event += 1

    # iterations
    def begin(self, value: str) -> None:
        self.value = value
        if self.cur is not None and self.cur.sigs:
            self.cur.key = self.pattern(self.cur)
            self.history.append(self.cur.key)
            self.templates = [t for t in self.templates if t.key != self.cur.key][-KEEP + 1 :]
            self.templates.append(self.cur)
        self.cur = Iteration()
        self.replans = 0
        self.factors.reset()
        budget = self.budget()
        left = (self.limit_s or 12.0) * PLAN_SHARE - self.planning_s
        length = max(1, 2 * len(self.templates[-1].sigs)) if self.templates else 1
        to_come = max(1.0, (self.events - self.event) / length) if self.events else 1.0
        self.allowance = self.planning_s + budget + max(0.0, left - budget) / to_come
        self.use(self.guess(), 0, budget)

    def pattern(self, it: Iteration) -> int:
        """An iteration's key: its signatures without Adam's state (made in the first
        step only, so an alternating trace's third step is its first one's pattern)."""
        if self.cat is None:
            return hash(tuple(it.sigs))
        k = self.cat - (self.marker is not None and self.marker < self.cat)
        return hash(tuple(s for s in it.sigs if s[k] != "optimizer_state"))

    def guess(self) -> Iteration | None:
        """The template the next iteration likely follows: what came after the last
        earlier occurrence of the previous pattern, else the previous one. After a
        guess went wrong (a followed plan left in its first half, as serving steps do
        when the batch changes), only a pattern that came twice is followed."""
        if not self.history:
            return None
        last = self.history[-1]
        for k in range(len(self.history) - 2, -1, -1):
            if self.history[k] == last:
                nxt = self.history[k + 1]
                return next((t for t in self.templates if t.key == nxt), None)
        return self.templates[-1] if self.misses < MISSES else None

    def budget(self) -> float:
        """Seconds of search for an iteration's first plan: a quarter of the time left
        spread over the iterations still to come, at most START_S; 0.05 s without
        case.json."""
        if not self.limit_s or self.cur is None or not self.templates:
            return 0.05
        left = self.limit_s - (time.monotonic() - self.clock)
        length = max(1, 2 * len(self.templates[-1].sigs))
        to_come = max(1.0, (self.events - self.event) / length)
        return max(0.0, min(START_S, 0.25 * left / to_come))

    # planning
    def use(self, tpl: Iteration | None, pos: int, budget_s: float, now: int = -1) -> None:
        """Follow `tpl` from position `pos` on: plan its remaining requests (sizes as
        predicted; the one at `pos` is `now` bytes when known) around what is live."""
        self.tpl, self.slot = tpl, {}
        if tpl is None or pos >= len(tpl.sigs):
            return
        # Only what the template freed within itself: a request it never freed (state made
        # once, as Adam's in the first step) may not come again.
        rest = [q for q in range(pos, len(tpl.sigs)) if tpl.end[q] < INF]
        if not rest:
            return
        f = self.factors
        f.planning()
        raw = [f.predict(tpl.mb[q], tpl.size[q]) if tpl.scaled[q] else tpl.size[q] for q in rest]
        if now >= 0 and rest[0] == pos:
            raw[0] = now
        sizes = [align_up(z, tpl.align[q]) for z, q in zip(raw, rest, strict=True)]
        late = [tpl.scaled[q] and tpl.mb[q] not in f.best for q in rest]  # not seen yet
        obstacles = []
        for bid, (start, end) in self.bf.live.items():
            it, q = self.where.get(bid, (None, -1))
            ahead = tpl.end[q] - pos if it is self.cur and q < len(tpl.end) else INF
            obstacles.append((start, end, ahead if 0 < ahead < INF else INF))
        start = [q - pos for q in rest]
        end = [tpl.end[q] - pos for q in rest]
        align = [tpl.align[q] for q in rest]
        began = time.monotonic()
        offsets, peak, bound = plan(start, end, sizes, align, obstacles, budget_s, self.event, late)
        self.planning_s += time.monotonic() - began
        raises = peak > self.bf.peak and peak > bound * SANE
        if raises and peak >= self.best_fit_peak(tpl, rest, raw):
            return  # keep following (matching, learning factors) without a plan
        self.slot = {q: (o, z) for q, o, z in zip(rest, offsets, sizes, strict=True)}

    def best_fit_peak(self, tpl: Iteration, rest: list[int], sizes: list[int]) -> int:
        """The peak best fit would reach from here if the iteration went as `tpl` did,
        with the predicted sizes (a copy of the allocator replays its requests and frees)."""
        bf = copy.deepcopy(self.bf)
        bf.capacity = 1 << 62
        frees: dict[int, list[int]] = {}
        for q in rest:
            frees.setdefault(tpl.end[q], []).append(q)
        for q, z in zip(rest, sizes, strict=True):
            for done in frees.pop(q, ()):
                bf.free(f"#{done}")
            bf.alloc(f"#{q}", z, tpl.align[q])
        return bf.peak

    def may_replan(self) -> bool:
        """Re-plans are capped per iteration and by the time allowance."""
        self.replans += 1
        return self.replans <= REPLANS and self.planning_s < self.allowance

    def follow(self, bid: str, sig: tuple, size: int, align: int) -> int | None:
        pos = len(self.cur.sigs)
        tpl = self.tpl
        if tpl is None:
            return None
        if not self.matches(tpl, pos, sig, size):
            # Another request than the template's: another template with this prefix
            # (alternating patterns), else best fit for the rest of the iteration.
            followed = tpl
            tpl = self.switch(pos, sig, size)
            if tpl is None:
                self.misses += 2 * pos < len(followed.sigs)  # left in its first half
                self.tpl = None
                return None
        elif tpl.scaled[pos] and size != tpl.size[pos]:
            f = self.factors
            f.learn(tpl.mb[pos], tpl.size[pos], size)
            if f.news(tpl.mb[pos]):
                if self.planning_s >= self.allowance:
                    self.slot = {}  # no time to plan again: best fit, not stale slots
                else:
                    self.use(tpl, pos, 0.0, size)  # plan the rest with the new factor
                    if self.tpl is None:
                        return None
        got = self.slot.get(pos)
        if got is None:
            return None
        off, room = got
        if align_up(size, align) > room:  # outgrew its slot: plan again from here
            if not self.may_replan():
                self.slot = {}
                return None
            self.use(tpl, pos, 0.0, size)
            got = self.slot.get(pos)
            if got is None:
                return None
            off = got[0]
        return off if self.bf.take(bid, off, off + size) else None

    def matches(self, tpl: Iteration, pos: int, sig: tuple, size: int) -> bool:
        """The request is the template's at `pos`: same signature, and the template's
        size, or (token-dependent) the template's times its micro-batch's factor."""
        if pos >= len(tpl.sigs) or tpl.sigs[pos] != sig:
            return False
        if tpl.size[pos] == size:  # also a micro-batch's tensor that does not scale
            return True
        return tpl.scaled[pos] and self.factors.agrees(tpl.mb[pos], tpl.size[pos], size)

    def relearn(self, tpl: Iteration, pos: int) -> bool:
        """Learn the factors of this iteration's requests so far against `tpl`; False
        when their sizes are not the template's scaled (another step, not a rescaled one)."""
        f, cur = self.factors, self.cur
        f.best = {}
        changed = [q for q in range(pos) if tpl.size[q] != cur.size[q]]
        for q in changed:
            if not tpl.scaled[q]:
                return False
            f.learn(tpl.mb[q], tpl.size[q], cur.size[q])
        return all(f.consistent(tpl.mb[q], tpl.size[q], cur.size[q]) for q in changed)

    def switch(self, pos: int, sig: tuple, size: int) -> Iteration | None:
        """Another template whose requests so far are this iteration's."""
        for tpl in reversed(self.templates):
            if tpl is self.tpl or len(tpl.sigs) <= pos:
                continue
            if tpl.sigs[pos] != sig or tpl.sigs[:pos] != self.cur.sigs:
                continue
            saved = self.factors.best
            if not self.relearn(tpl, pos) or not self.matches(tpl, pos, sig, size):
                self.factors.best = saved
                continue
            if self.may_replan():
                if tpl.scaled[pos] and size != tpl.size[pos]:
                    self.factors.learn(tpl.mb[pos], tpl.size[pos], size)
                self.use(tpl, pos, 0.0, size)
                return self.tpl
        return None


if __name__ == "__main__":
    serve(Strong)
