"""Templates and plans (the strong allocator's learning): a Follower records units of
the trace (iterations; or, finer, one micro-batch's forward or backward) as templates,
guesses which one the next unit follows, plans it offline around what is live
(place.py, placer.cpp) and answers the planned offsets while the requests match. See
main.py's docstring for the policy and its measurements."""

from __future__ import annotations

import copy
import json
import os
import time
from pathlib import Path

from factors import Factors, scaled
from online_greedy import align_up
from place import INF, plan
from ties import SplitTies

KEEP = 6  # templates remembered
REPLANS = 16  # template switches and outgrown slots re-planned per iteration
MISSES = 1  # wrong guesses before only confirmed patterns are followed
SANE = 1.03  # a plan above the peak so far must be this close to its own bound
START_S = 0.3  # search seconds, at most, of an iteration's first plan
WIDE_NEWS = 0.01  # of a phase plan's bound: a size class off by less is no news


def case_limits() -> tuple[float, int]:
    """(time limit in s, events) from case.json; (0, 0) when it is not there."""
    try:
        case = json.loads((Path(os.environ["MEMORACE_CASE_DIR"]) / "case.json").read_text())
        return float(case["time_limit_s"]), int(case["events"])
    except (KeyError, OSError, ValueError, TypeError):
        return 0.0, 0


def merged(obstacles: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Obstacles (start, end, free time) with neighbours freed at the same time joined:
    the same plan, and the placer's time grows with their number."""
    out: list[tuple[int, int, int]] = []
    for start, end, free in sorted(obstacles):
        if out and out[-1][1] == start and out[-1][2] == free:
            out[-1] = (out[-1][0], end, free)
        else:
            out.append((start, end, free))
    return out


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
        self.live = 0  # bytes of its requests live now
        self.most = 0  # ... at most

    def add(self, sig: tuple, size: int, align: int, scaled: bool, mb: str) -> int:
        self.sigs.append(sig)
        self.size.append(size)
        self.align.append(align)
        self.end.append(INF)
        self.scaled.append(scaled)
        self.mb.append(mb)
        self.live += size
        self.most = max(self.most, self.live)
        return len(self.sigs) - 1


class Follower:
    """Learns units of the trace (iterations; or, finer, one micro-batch's forward or
    backward) as templates and follows the plans made from them. Shares the allocator
    `bf` with its owner and answers only planned offsets."""

    def __init__(self, bf: SplitTies, names: list[str], split: list[int], share: float) -> None:
        self.bf = bf
        self.split = split  # hint indexes whose values name a unit; the first: the iteration
        self.keep = [k for k in range(len(names)) if k not in split]  # a signature's hints
        self.cat = names.index("category") if "category" in names else None
        self.catk = self.keep.index(self.cat) if self.cat is not None else None
        self.mbx = names.index("microbatch") if "microbatch" in names else None
        self.share = share  # of the time limit, for planning
        self.enabled = True  # may plan (its owner turns it off where the peak is not at stake)
        self.capped = len(split) > 1  # plans no more once its share of the time is spent
        self.plan_bound = 0  # the last plan's lower bound (bytes)
        self.deferred: float | None = None  # a plan's search budget while it waits for the scale
        self.most_seen = 0  # the most bytes live within one unit, over all seen
        self.factors = Factors(wide=len(split) > 1)
        self.event = 0
        self.value: tuple | None = None
        self.cur: Iteration | None = None
        self.templates: list[Iteration] = []
        self.history: list[int] = []  # keys of ended units, in order
        self.where: dict[str, tuple[Iteration, int]] = {}  # live id -> (unit, pos)
        self.tpl: Iteration | None = None  # the template being followed
        self.slot: dict[int, tuple[int, int]] = {}  # template position -> (offset, room)
        self.replans = 0
        self.misses = 0  # followed plans left in their first half
        self.planning_s = 0.0
        self.allowance = 0.0  # planning_s may reach this within the running unit
        self.clock = time.monotonic()
        self.limit_s, self.events = case_limits()

    def starts(self, values: list[str]) -> bool:
        """Does this request begin a new unit?"""
        unit = tuple(values[k] for k in self.split)
        return values[self.split[0]] != "-" and unit != self.value

    def enter(self, values: list[str]) -> None:
        """A new unit begins where the request's values change (planned from here)."""
        if self.starts(values):
            self.begin(tuple(values[k] for k in self.split))

    def request(
        self, bid: str, size: int, align: int, values: list[str], answered: bool
    ) -> int | None:
        """Track a request (after enter); its planned offset, or None. `answered`: the
        owner has an answer already (tracked only)."""
        off = None
        if self.cur is not None:
            sig = tuple(values[k] for k in self.keep)
            off = None if answered else self.follow(bid, sig, size, align)
            cat = values[self.cat] if self.cat is not None else None
            mb = values[self.mbx] if self.mbx is not None else "-"
            pos = self.cur.add(sig, size, align, scaled(cat, mb, size), mb)
            self.where[bid] = (self.cur, pos)
        self.event += 1
        return off

    def free(self, bid: str) -> None:
        found = self.where.pop(bid, None)
        if found is not None and found[0] is self.cur:
            self.cur.end[found[1]] = len(self.cur.sigs)
            self.cur.live -= self.cur.size[found[1]]
        self.event += 1

    def most(self) -> int:
        """The most bytes a unit seen so far had live at once."""
        self.most_seen = max([self.most_seen] + [t.most for t in self.templates])
        return self.most_seen

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
        left = (self.limit_s or 12.0) * self.share - self.planning_s
        length = max(1, 2 * len(self.templates[-1].sigs)) if self.templates else 1
        to_come = max(1.0, (self.events - self.event) / length) if self.events else 1.0
        self.allowance = self.planning_s + budget + max(0.0, left - budget) / to_come
        if self.capped:
            self.allowance = (self.limit_s or 12.0) * self.share  # the cap alone
        self.use(self.guess(), 0, budget)

    def pattern(self, it: Iteration) -> int:
        """A unit's key: its signatures without Adam's state (made in the first
        step only, so an alternating trace's third step is its first one's pattern)."""
        if self.catk is None:
            return hash(tuple(it.sigs))
        k = self.catk
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
        """Seconds of search for a unit's first plan: a quarter of the time left (of its
        share, when capped) spread over the units still to come, at most START_S; 0.05 s
        without case.json."""
        if not self.limit_s or self.cur is None or not self.templates:
            return 0.05
        left = self.limit_s - (time.monotonic() - self.clock)
        if self.capped:  # its own share only
            left = min(left, self.limit_s * self.share - self.planning_s)
        length = max(1, 2 * len(self.templates[-1].sigs))
        to_come = max(1.0, (self.events - self.event) / length)
        return max(0.0, min(START_S, 0.25 * left / to_come))

    # planning
    def use(self, tpl: Iteration | None, pos: int, budget_s: float, now: int = -1) -> None:
        """Follow `tpl` from position `pos` on: plan its remaining requests (sizes as
        predicted; the one at `pos` is `now` bytes when known) around what is live."""
        self.tpl, self.slot = tpl, {}
        if tpl is None or pos >= len(tpl.sigs) or not self.enabled:
            return
        if self.capped and self.planning_s >= (self.limit_s or 12.0) * self.share:
            return  # its share of the time is spent: best fit from here
        self.deferred = None
        if self.factors.wide and not self.factors.best and any(tpl.scaled[pos:]):
            self.deferred = budget_s  # another micro-batch, scale unknown: plan when it shows
            return
        # Only what the template freed within itself: a request it never freed (state made
        # once, as Adam's in the first step) may not come again.
        rest = [q for q in range(pos, len(tpl.sigs)) if tpl.end[q] < INF]
        if not rest:
            return
        f = self.factors
        f.planning()
        raw = [self.predicted(tpl, q) for q in rest]
        if now >= 0 and rest[0] == pos:
            raw[0] = now
        sizes = [align_up(z, tpl.align[q]) for z, q in zip(raw, rest, strict=True)]
        late = [tpl.scaled[q] and tpl.mb[q] not in f.best for q in rest]  # not seen yet
        obstacles = []
        for bid, (start, end) in self.bf.live.items():
            it, q = self.where.get(bid, (None, -1))
            ahead = tpl.end[q] - pos if it is self.cur and q < len(tpl.end) else INF
            obstacles.append((start, end, ahead if 0 < ahead < INF else INF))
        if self.capped:
            obstacles = merged(obstacles)
        start = [q - pos for q in rest]
        end = [tpl.end[q] - pos for q in rest]
        align = [tpl.align[q] for q in rest]
        began = time.monotonic()
        offsets, peak, bound = plan(start, end, sizes, align, obstacles, budget_s, self.event, late)
        self.planning_s += time.monotonic() - began
        wide = self.factors.wide  # phases: no 3 % grace, for their sizes are guessed
        raises = peak > self.bf.peak and (wide or peak > bound * SANE)
        if raises and peak >= self.best_fit_peak(tpl, rest, raw):
            return  # keep following (matching, learning factors) without a plan
        self.slot = {q: (o, z) for q, o, z in zip(rest, offsets, sizes, strict=True)}
        self.plan_bound = bound

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
        elif self.deferred is not None and tpl.scaled[pos]:
            self.factors.learn(tpl.mb[pos], tpl.size[pos], size)
            budget, self.deferred = self.deferred, None
            self.use(tpl, pos, budget, size)  # the unit's scale is known: plan now
            if self.tpl is None:
                return None
        elif tpl.scaled[pos] and size != tpl.size[pos]:
            f = self.factors
            f.learn(tpl.mb[pos], tpl.size[pos], size)
            if f.news(tpl.mb[pos], tpl.size[pos], size, int(self.plan_bound * WIDE_NEWS)):
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
            if self.factors.wide and size < WIDE_NEWS * self.plan_bound:
                return None  # a small one: best fit, the plan goes on
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

    def predicted(self, tpl: Iteration, q: int) -> int:
        """The size expected for the template's request q in this unit."""
        if not tpl.scaled[q]:
            return tpl.size[q]
        return self.factors.predict(tpl.mb[q], tpl.size[q])

    def relearn(self, tpl: Iteration, pos: int) -> bool:
        """Learn the factors of this iteration's requests so far against `tpl`; False
        when their sizes are not the template's scaled (another step, not a rescaled one)."""
        f, cur = self.factors, self.cur
        f.best, f.known = {}, {}
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
            saved = self.factors.best, self.factors.known
            if not self.relearn(tpl, pos) or not self.matches(tpl, pos, sig, size):
                self.factors.best, self.factors.known = saved
                continue
            if self.may_replan():
                if tpl.scaled[pos] and size != tpl.size[pos]:
                    self.factors.learn(tpl.mb[pos], tpl.size[pos], size)
                self.use(tpl, pos, 0.0, size)
                return self.tpl
        return None
