#!/usr/bin/env python3
"""Strong online allocator: learns the iteration while it allocates; Python 3.11, numpy.

Policy.
1. Online best fit (online_greedy.BestFit: smallest free gap, coalescing) for every
   request that no plan covers. It also keeps the true occupancy, so a planned offset
   is answered only when it is free at that moment (never an invalid answer).
2. Iterations: a hint named `iteration` (else `step`) splits the trace where its value
   changes (`-` belongs to the running iteration). Each iteration is recorded as a
   template: per request its signature (every hint but the iteration's; sizes apart),
   size, alignment, and when it was freed, counted in requests since the iteration
   began (so iterations whose frees drift still line up).
3. When an iteration starts, the template it will follow is guessed (the iteration
   that came after the last occurrence of the previous one's pattern, so alternating
   patterns are followed; else the previous one) and planned offline
   (online_strong/place.py, placer.cpp: largest / longest-lived first, each at the
   lowest offset clear of everything overlapping in time, plus randomized orders
   while the time budget lasts) around the blocks live now, as fixed obstacles.
4. Request by request the iteration is matched against the template by position.
   A matching request (same signature and size) takes its planned offset if it is
   free, else best fit answers. A request of another signature looks for another
   template with the same prefix (planned again from there, around what is live);
   when there is none, or the size differs (micro-batches of another sequence
   length), the rest of the iteration goes by best fit.
5. Guards: a plan that would raise the peak so far is followed only when it comes
   within 3 % of its own lower bound or below the peak that best fit would reach on
   the same template (a copy of the allocator replays it); else best fit. Only what
   the template freed within itself is planned: what it never freed (state made once,
   as Adam's in the first step) may not come again. Once a followed guess failed in
   its first half (as serving steps do when the batch changes), only patterns seen
   twice are followed.

Without an iteration hint (and without `step`) the allocator is plain best fit. The
first occurrence of every pattern is best fit too, so strong gains over greedy only
where a repeated iteration needs more than the first one (measured: benchmarks/
online_calibration.py: ahead where an iteration repeats one seen with the same sizes
and needs more than the first, as after Adam's state is made in step 0).

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

from online_greedy import BestFit, align_up, serve  # noqa: E402
from place import INF, plan  # noqa: E402

MARKERS = ("iteration", "step")
KEEP = 6  # templates remembered
REPLANS = 16  # template switches an iteration may make (each costs a placement)
MISSES = 1  # wrong guesses before only confirmed patterns are followed
SANE = 1.03  # a plan above the peak so far must be this close to its own bound


def case_limits() -> tuple[float, int]:
    """(time limit in s, events) from case.json; (0, 0) when it is not there."""
    try:
        case = json.loads((Path(os.environ["MEMORACE_CASE_DIR"]) / "case.json").read_text())
        return float(case["time_limit_s"]), int(case["events"])
    except (KeyError, OSError, ValueError, TypeError):
        return 0.0, 0


class Iteration:
    """One iteration's requests; times are request positions within it."""

    def __init__(self, first_event: int) -> None:
        self.first = first_event
        self.sigs: list[tuple] = []
        self.size: list[int] = []
        self.align: list[int] = []
        self.end: list[int] = []  # position count when freed; INF if not in it
        self.key = 0  # hash of the signature sequence, set when it ends


class Strong:
    def __init__(self, capacity: int, names: list[str]) -> None:
        self.bf = BestFit(capacity)
        found = [names.index(m) for m in MARKERS if m in names]
        self.marker = found[0] if found else None
        self.event = 0
        self.value: str | None = None
        self.cur: Iteration | None = None
        self.templates: list[Iteration] = []
        self.history: list[int] = []  # keys of ended iterations, in order
        self.where: dict[str, tuple[Iteration, int]] = {}  # live id -> (iteration, pos)
        self.tpl: Iteration | None = None  # the template being followed
        self.slot: dict[int, int] = {}  # template position -> planned offset
        self.replans = 0
        self.misses = 0  # followed plans left in their first half
        self.planning_s = 0.0
        self.allowance = 0.0  # planning_s may reach this within the running iteration
        self.clock = time.monotonic()
        self.limit_s, self.events = case_limits()

    # the protocol
    def alloc(self, bid: str, size: int, align: int, values: list[str]) -> int:
        if self.marker is not None and values[self.marker] not in ("-", self.value):
            self.begin(values[self.marker])
        off = None
        if self.cur is not None:
            sig = tuple(v for k, v in enumerate(values) if k != self.marker)
            off = self.follow(bid, sig, size)
            cur = self.cur
            self.where[bid] = (cur, len(cur.sigs))
            cur.sigs.append(sig)
            cur.size.append(size)
            cur.align.append(align)
            cur.end.append(INF)
        if off is None:
            off = self.bf.alloc(bid, size, align)
        self.event += 1
        return off

    def free(self, bid: str) -> None:
        self.bf.free(bid)
        found = self.where.pop(bid, None)
        if found is not None and found[0] is self.cur:
            self.cur.end[found[1]] = len(self.cur.sigs)
        self.event += 1

    # iterations
    def begin(self, value: str) -> None:
        self.value = value
        if self.cur is not None and self.cur.sigs:
            self.cur.key = hash(tuple(self.cur.sigs))
            self.history.append(self.cur.key)
            self.templates = [t for t in self.templates if t.key != self.cur.key][-KEEP + 1 :]
            self.templates.append(self.cur)
        self.cur = Iteration(self.event)
        self.replans = 0
        budget = self.budget()
        left = (self.limit_s or 12.0) / 3 - self.planning_s
        length = max(1, 2 * len(self.templates[-1].sigs)) if self.templates else 1
        to_come = max(1.0, (self.events - self.event) / length) if self.events else 1.0
        self.allowance = self.planning_s + budget + max(0.0, left - budget) / to_come
        self.use(self.guess(), 0, budget)

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
        """Seconds of search for an iteration's plan: a quarter of the time left spread
        over the iterations still to come, at most 2 s; 0.05 s without case.json."""
        if not self.limit_s or self.cur is None or not self.templates:
            return 0.05
        left = self.limit_s - (time.monotonic() - self.clock)
        length = max(1, 2 * len(self.templates[-1].sigs))
        to_come = max(1.0, (self.events - self.event) / length)
        return max(0.0, min(2.0, 0.25 * left / to_come))

    def use(self, tpl: Iteration | None, pos: int, budget_s: float) -> None:
        """Follow `tpl` from position `pos` on: plan its remaining requests around what
        is live now."""
        self.tpl, self.slot = tpl, {}
        if tpl is None or pos >= len(tpl.sigs):
            return
        # Only what the template freed within itself: a request it never freed (state made
        # once, as Adam's in the first step) may not come again, and planning it as live
        # to the end would reserve its room for nothing (it goes by best fit if it comes).
        rest = [q for q in range(pos, len(tpl.sigs)) if tpl.end[q] < INF]
        if not rest:
            return
        sizes = [align_up(tpl.size[q], tpl.align[q]) for q in rest]
        obstacles = []
        for bid, (start, end) in self.bf.live.items():
            it, q = self.where.get(bid, (None, -1))
            ahead = tpl.end[q] - pos if it is self.cur and q < len(tpl.end) else INF
            obstacles.append((start, end, ahead if 0 < ahead < INF else INF))
        start = [q - pos for q in rest]
        end = [tpl.end[q] - pos if tpl.end[q] < INF else INF for q in rest]
        align = [tpl.align[q] for q in rest]
        began = time.monotonic()
        offsets, peak, bound = plan(start, end, sizes, align, obstacles, budget_s, self.event)
        self.planning_s += time.monotonic() - began
        if peak > self.bf.peak and peak > bound * SANE and peak >= self.best_fit_peak(tpl, rest):
            self.tpl = None  # a plan that raises the peak more than best fit would: best fit
            return
        self.slot = dict(zip(rest, offsets, strict=True))

    def best_fit_peak(self, tpl: Iteration, rest: list[int]) -> int:
        """The peak best fit would reach from here if the iteration went as `tpl` did
        (a copy of the allocator replays the template's requests and frees)."""
        bf = copy.deepcopy(self.bf)
        frees: dict[int, list[int]] = {}
        for q in rest:
            frees.setdefault(tpl.end[q], []).append(q)
        for q in rest:
            for done in frees.pop(q, ()):
                bf.free(f"#{done}")
            bf.alloc(f"#{q}", tpl.size[q], tpl.align[q])
        return bf.peak

    def follow(self, bid: str, sig: tuple, size: int) -> int | None:
        pos = len(self.cur.sigs)
        tpl = self.tpl
        if tpl is None:
            return None
        if pos >= len(tpl.sigs) or tpl.sigs[pos] != sig or tpl.size[pos] != size:
            # Another request than the template's: another template with this prefix
            # (alternating patterns), else best fit for the rest of the iteration.
            # (Measured on online-train: re-planning the rest with sizes scaled by
            # what each micro-batch showed lost to best fit on 3 of 5 cases.)
            followed = tpl  # switch() may clear self.tpl (a re-plan the guard refused)
            tpl = self.switch(pos, sig, size)
            if tpl is None:
                self.misses += 2 * pos < len(followed.sigs)  # left in its first half
                self.tpl = None
                return None
        off = self.slot.get(pos)
        if off is None:
            return None
        return off if self.bf.take(bid, off, off + size) else None

    def may_replan(self) -> bool:
        """Re-plans are capped per iteration and by time: planning takes at most a
        third of the time limit (12 s assumed without case.json), shared evenly by the
        iterations still to come."""
        self.replans += 1
        return self.replans <= REPLANS and self.planning_s < self.allowance

    def switch(self, pos: int, sig: tuple, size: int) -> Iteration | None:
        """Another template whose requests so far are this iteration's."""
        cur = self.cur
        for tpl in reversed(self.templates):
            if tpl is self.tpl or len(tpl.sigs) <= pos:
                continue
            same = tpl.sigs[pos] == sig and tpl.size[pos] == size and tpl.size[:pos] == cur.size
            if same and tpl.sigs[:pos] == cur.sigs and self.may_replan():
                self.use(tpl, pos, 0.0)
                return self.tpl
        return None


if __name__ == "__main__":
    serve(Strong)
