#!/usr/bin/env python3
"""Strong offload planner for v2 cases; Python 3.11 and numpy (an archive: see pack.py).

v1 cases (no v2 field) go to the C++ planner `offload_strong_v1/` (its main.cpp built
as ./strong_v1 by memorace.toml). On v2 cases, anytime, every better plan written at once:
1. greedy's plan (offload_greedy/), so the result is never below greedy, then the
   same plan placed again by each release-aware placer (again after the seeds);
2. with tensors that start on NVMe: the same choice with their copy-ins paced so that
   the NVMe reads run back to back from time 0 (nvme_pace.py; half the budget);
3. seeds (60 % of the budget left), for each of three ways to rank the idle gaps to park
   (greedy's longest idle time first; idle time per square root of bytes, which keeps
   a decode's large embedding and LM head resident and parks small weights instead;
   idle byte-time): greedy's own descent of the memory target with that rank, then
   (the ranks whose descent did best first, equal shares) the choice of what to park
   at the highest memory target whose plan fits (bisection), with copy-ins moved early
   only up to a lower fill level (room left for fragmentation), placed longest window
   first or, where that does not fit, by the denser skyline, both keeping off bytes that
   a copy-out is still moving when they come in (placing.py); on the best target,
   lower fill levels and the other ways out (compress whenever it saves link time or
   never; recompute whenever the sources are held);
4. local search on the best plan, led by the judge's own timing (a bundled copy of
   judge.types.offload computes the exact makespan): for the steps that wait longest,
   fetch the late residency earlier or later (one at a time, or all led ones a step
   at once), raise its copy priority or that of the copy-out whose bytes it waits for,
   keep it resident over the gap before it, toggle its compression; then keep
   residencies over the gaps with the least compute time; then random moves. A moved
   residency keeps its offset or takes the lowest free gap, one clear of running
   copy-outs first (all placed again if none).
The search stops at 75 % of time_limit_s (at most time_limit_s - 4 s).
"""

import json
import os
import random
import sys
import time
import traceback
from fractions import Fraction
from pathlib import Path

from judged import Judge

HERE = Path(__file__).resolve().parent
V2_KEYS = {"h2d_latency", "d2h_latency", "host_capacity", "nvme"}
SEED_KNOBS = ((2, False), (0, False), (None, False), (2, True), (0, True))
# Which idle gaps the seeds park first (gap rows: tensor, use, a, b, bytes, idle µs):
# greedy's longest idle time; idle time per square root of bytes (small tensors parked
# first, the large ones kept resident when their reload would hold the link long at
# once: a decode's embedding and LM head); idle byte-time (large tensors first).
# Placements tried in turn until one fits (placing.py, skyline.py), each aware of the
# copy-outs still running (the densest, the skyline, last: its plans wait more); two,
# as a plan that fits neither costs the seeds both. The best plan gets every one.
PLACERS = ("longest first, release", "skyline, release")
REPLACERS = (*PLACERS, "first fit, release")
RANKS = (None, lambda r: (-r[5] / r[4] ** 0.5, -r[4]), lambda r: (-r[5] * r[4], -r[4]))


def is_v2(case):
    return bool(V2_KEYS & set(case)) or any(
        set(t) - {"id", "size", "alignment", "uses"} for t in case["tensors"]
    )


def importable():
    """The greedy planner's modules (offload_greedy/, entry offload_greedy.py) and the
    judge's offload model (judge/): beside this file in the archive, one and two folders
    up in the repository."""
    greedy = "offload_greedy"
    for where in (HERE, HERE / greedy, HERE.parent / greedy, HERE.parent.parent):
        if str(where) not in sys.path:
            sys.path.append(str(where))


class State:
    """A plan in greedy's terms plus copy priorities."""

    def __init__(self, rows, leave, recomputed, offsets, priority=None, placer="first fit"):
        self.rows, self.leave, self.recomputed, self.offsets = rows, leave, recomputed, offsets
        self.priority, self.placer = dict(priority or {}), placer


class Search:
    def __init__(self, case, out_path, deadline):
        import offload_greedy as g

        self.g, self.case, self.out_path, self.deadline = g, case, out_path, deadline
        self.tensors = [(t["id"], int(t["size"]), max(1, int(t["alignment"])), list(t["uses"]))
                        for t in case["tensors"]]  # fmt: skip
        self.kinds = g.kinds_of(case)
        self.judge = Judge(case)
        self.best, self.best_span, self.tried = None, None, set()
        self.last_span = None  # of the last plan judged
        self.n_points = 2 * len(case["steps"])

    def left(self):
        return self.deadline - time.monotonic()

    def place(self, rows, recomputed, placer="first fit", leave=None, priority=None):
        """Offsets (None past the capacity) by `placer` (placing.placed_by)."""
        import placing

        placed = self.g.as_placed(rows, recomputed)
        busy = self.busy(placed, placer, leave, priority)
        return placing.placed_by(self.g, self.case, self.tensors, self.kinds, placed, placer, busy)

    def busy(self, placed, placer, leave, priority):
        """placing.reach for a release-aware placer (None for the others)."""
        import placing

        if not placer.endswith(", release") or leave is None:
            return None
        return placing.reach(self.case, self.tensors, self.kinds, placed, leave,
                             priority or {}, self.step_ends(), self.n_points)  # fmt: skip

    def step_ends(self):
        """Each step's end (µs) by the best plan's timing, or compute alone."""
        if self.best is not None:
            unit = self.best_timing.unit
            return [e / unit for e in self.best_timing.step_end]
        done, ends = 0, []
        for d in self.case["steps"]:
            done += int(d)
            ends.append(float(done))
        return ends

    def offer(self, state):
        """Judge `state`; keep and write it when it beats the best. True when it did."""
        if state is None or state.offsets is None:
            return False
        raw = self.g.plan_json(self.tensors, state.rows, state.offsets, state.leave,
                               state.recomputed, state.priority)  # fmt: skip
        timing, plan = self.judge.timing(raw)
        if timing is None:
            return False
        span = self.last_span = Fraction(timing.makespan, timing.unit)
        if self.best_span is not None and span >= self.best_span:
            return False
        self.best, self.best_span = state, span
        self.best_timing, self.best_plan = timing, plan
        self.write(raw)
        print(f"plan makespan={float(span):.3f} t={time.monotonic() - START:.2f} {state.placer}",
              file=sys.stderr)  # fmt: skip
        return True

    def write(self, raw):
        tmp = self.out_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(raw, f, separators=(",", ":"))
        os.replace(tmp, self.out_path)

    # ---- seeds ---------------------------------------------------------------------------

    def build(self, chosen, knobs=None):
        """The state for greedy's choice of parks `chosen`, placed (None if it does not fit)."""
        g = self.g
        rows = g.residencies(self.tensors, chosen, self.kinds)
        leave, rec = g.ways(self.case, self.tensors, self.kinds, rows, knobs or g.GREEDY)
        for placer in PLACERS:
            offsets = self.place(rows, rec, placer, leave)
            if offsets is not None:
                return State(rows, leave, rec, offsets, placer=placer)
        return None

    def replaced(self):
        """The best plan placed again by each placer (the best one differs by case)."""
        b = self.best
        for placer in REPLACERS:
            if placer != b.placer and self.left() > 0:
                offsets = self.place(b.rows, b.recomputed, placer, b.leave, b.priority)
                self.offer(State(b.rows, b.leave, b.recomputed, offsets, b.priority, placer))

    def paced_seeds(self, target):
        """Tensors that start on NVMe fetched at a pace that keeps its reads back to back
        (nvme_pace.py), at memory targets a little below greedy's (their bytes arrive
        early), paced by the best plan's timing (again after each better plan) or by
        compute slowed down twice; half the time at most."""
        import nvme_pace as pace

        if not pace.starts_on_nvme(self.case, self.kinds):
            return
        cap = int(self.case["capacity"])
        base, until = cap if target is None else target, time.monotonic() + self.left() / 2
        for drop, which in ((2, 0), (1, 0), (3, 0), (2, 1), (2, 0)):
            if time.monotonic() >= until:
                return
            ends = pace.estimates(self.case, self.best_timing)[which]
            chosen = pace.paced_choice(self.g, self.case, self.tensors, self.kinds,
                                       base - drop * cap // 25, ends)  # fmt: skip
            self.offer(self.build(chosen))

    def ranked_seeds(self, greedy_target):
        """Greedy's descent (below) with each other way of ranking the gaps (RANKS); then
        the seeds below for every rank, the one whose descent did best first, on equal
        shares of 60 % of the time left (the rest for the local search). A rank's
        descent does not tell how well its seeds will do: none is left out."""
        found = {0: self.best_span}
        for n in range(1, len(RANKS)):  # from the capacity: another rank may fit higher
            found[n] = self.descend(RANKS[n], time.monotonic() + self.left() / 4)
        order = sorted(found, key=lambda n: (found[n] is None, found[n] or 0, n))
        until = time.monotonic() + 0.6 * self.left()
        for m, n in enumerate(order):
            share = (until - time.monotonic()) / (len(order) - m)
            self.seeds(greedy_target, RANKS[n], time.monotonic() + share)

    def descend(self, rank, until):
        """Greedy's own search with gaps ranked by `rank`: the memory target lowered 4 % at
        a time from the capacity until the plan fits (copy-ins early up to the target); the
        makespan of that plan (None if none fitted in time)."""
        g, cap = self.g, int(self.case["capacity"])
        load0 = g.base_load(self.tensors, self.n_points, self.kinds)
        gaps = g.gap_table(self.tensors, self.case["steps"])
        entries = g.entry_gaps(self.tensors, self.kinds)
        target = cap
        while target > 0 and time.monotonic() < until:
            state = self.build(g.choose(self.tensors, gaps, load0, target, entries, None, rank))
            if state is not None:
                self.last_span = None
                self.offer(state)
                return self.last_span
            target -= cap // 25
        return None

    def seeds(self, greedy_target, rank, until):
        """Park as little as fits: bisect the memory target (what to park) between one
        whose plan fits and one whose does not, each target with copy-ins moved early
        only up to a lower fill level (room for fragmentation) and placed longest first
        or by first fit; then, on the highest target that fits, other fill levels and
        the other ways out (compress whenever it saves link time or never; recompute
        whenever the sources are held). Fewer parks mean less link traffic: on a
        link-bound case the best plan sits at the edge of what fits."""
        g, case, cap = self.g, self.case, int(self.case["capacity"])
        load0 = g.base_load(self.tensors, self.n_points, self.kinds)
        gaps = g.gap_table(self.tensors, case["steps"])
        entries = g.entry_gaps(self.tensors, self.kinds)

        def at(park, fill, knobs=g.GREEDY):
            if time.monotonic() >= until:
                return None
            chosen = g.choose(self.tensors, gaps, load0, park, entries, fill, rank)
            return self.build(chosen, knobs)

        step = max(1, cap // 20)

        def fits(park):
            """Does the plan parking down to `park` fit, with copy-ins moved early only up
            to 4 steps below (the most room for fragmentation that the fill leaves)?"""
            state = at(park, max(step, park - 4 * step))
            self.offer(state)
            return state is not None

        best, high = (cap, fits(cap)), cap
        if not best[1]:
            low = cap // 2 if greedy_target is None else greedy_target
            best = (low, fits(low))
            while not best[1] and low > step and time.monotonic() < until:
                low //= 2  # nothing fits yet: park more
                best = (low, fits(low))
        while best[1] and high - best[0] > step // 2 and time.monotonic() < until:
            mid = (best[0] + high) // 2
            if fits(mid):
                best = (mid, True)
            else:
                high = mid
        if not best[1]:
            return
        park, fill = best[0], max(step, best[0] - 4 * step)
        for higher in range(fill + step, park + 1, step):  # a higher fill fits less
            state = at(park, higher)
            if state is None:
                break
            fill = higher if self.offer(state) else fill
        for knobs in SEED_KNOBS[1:]:
            self.offer(at(park, fill, g.Knobs(*knobs)))

    # ---- local search --------------------------------------------------------------------

    def residency(self, r):
        """(tensor, residency number) of the judge's residency row r."""
        return int(self.best_plan.tensor[r]), int(self.best_plan.index[r])

    def moves(self, i, k):
        """Changed copies of the best state for residency k of tensor i."""
        b = self.best
        out = []
        pre = b.rows[i][k][2]
        if pre is not None and (i, k) not in b.recomputed:
            low = (
                -1 if k == 0 else self.tensors[i][3][b.rows[i][k - 1][0] + b.rows[i][k - 1][1] - 1]
            )
            for p in sorted({pre - 1, pre - 2, pre - 4, (pre + low) // 2, low}, reverse=True):
                if low <= p < pre:
                    out.append(("pre", i, k, p))
            if pre + 1 < self.tensors[i][3][b.rows[i][k][0]]:  # later: off the head of the line
                out.append(("pre", i, k, pre + 1))
            out.append(("prio", i, k, b.priority.get((i, k), 0) + 1))
        if k > 0 and b.leave[i][k - 1] in ("copy", "compressed", "nvme"):
            out.append(("prio", i, k - 1, b.priority.get((i, k - 1), 0) + 1))
        if k > 0:  # keep it resident over the gap before it: no copy at all
            out.append(("merge", i, k - 1, None))
        if k > 0 and self.kinds[i].compress and b.leave[i][k - 1] in ("copy", "compressed"):
            out.append(("way", i, k - 1, {"copy": "compressed"}.get(b.leave[i][k - 1], "copy")))
        if k > 0 and self.kinds[i].recompute is not None:  # rebuild it, or copy it in
            out.append(("rec", i, k, (i, k) not in b.recomputed))
        return out

    def apply(self, *moves):
        b = self.best
        rows, prio, moved = [list(r) for r in b.rows], dict(b.priority), []
        leave, rec, offsets = b.leave, b.recomputed, b.offsets
        for kind, i, k, value in moves:
            if kind == "prio":
                prio[(i, k)] = value
            elif kind == "way":
                leave = [list(x) for x in leave]
                leave[i][k] = value
            elif kind == "rec":  # recomputed: the residency before drops its bytes
                leave, rec = [list(x) for x in leave], set(rec) ^ {(i, k)}
                leave[i][k - 1] = "drop" if value else "copy"
                moved.append((i, k))
            elif kind == "merge":
                leave, rec, prio, offsets = self.merged(i, k, rows, leave, rec, prio, offsets)
                moved.append((i, k))
            else:
                first, count, _ = rows[i][k]
                rows[i][k] = (first, count, value)
                moved.append((i, k))
        if moved:
            offsets = self.refit(rows, rec, offsets, moved, leave, prio)
        return State(rows, leave, rec, offsets, prio, b.placer)

    def merged(self, i, k, rows, leave, rec, prio, offsets):
        """Residencies k and k+1 of tensor i made one (in `rows`, in place)."""
        (first, count, pre), (_, more, _) = rows[i][k], rows[i][k + 1]
        rows[i][k : k + 2] = [(first, count + more, pre)]
        leave = [list(x) for x in leave]
        del leave[i][k]
        offsets = [list(x) for x in offsets]
        del offsets[i][k + 1]

        def shift(key):
            return (key[0], key[1] - 1) if key[0] == i and key[1] > k + 1 else key

        rec = {shift(x) for x in rec if x != (i, k + 1)}
        prio = {shift(x): v for x, v in prio.items() if x != (i, k + 1)}
        return leave, rec, prio, offsets

    def refit(self, rows, rec, offsets, moved, leave, prio):
        """Offsets for `rows` (the best state's, residencies `moved` refetched): each moved
        one keeps its offset or takes the lowest free gap (placing.refit); all placed
        again only when there is none."""
        import placing

        placer = self.best.placer
        placed = self.g.as_placed(rows, rec)
        busy = self.busy(placed, placer, leave, prio)
        res = self.g.windows(self.tensors, placed, self.kinds, self.n_points)
        cap = int(self.case["capacity"])
        got = placing.refit(self.tensors, res, offsets, moved, cap, busy)
        return got if got is not None else self.place(rows, rec, placer, leave, prio)

    def led(self):
        """Moves for the residencies behind the longest stalls, longest first."""
        timing = self.best_timing
        order = sorted(range(len(timing.stall)), key=lambda s: -timing.stall[s])
        for s in order[:8]:
            cause = timing.causes[s] if timing.causes else None
            if not timing.stall[s] or cause is None:
                break
            _, r, q = cause
            for who in (r, q):
                if who >= 0:
                    yield from self.moves(*self.residency(who))

    def merges(self):
        """Untried moves that keep a residency over the gap before its next one, the
        gaps with the least compute time first (the cheapest to stay for)."""
        done = [0]
        for d in self.case["steps"]:
            done.append(done[-1] + int(d))
        found = []
        for i, rows in enumerate(self.best.rows):
            uses = self.tensors[i][3]
            for k in range(1, len(rows)):
                move = ("merge", i, k - 1, None)
                if move not in self.tried:
                    last = uses[rows[k - 1][0] + rows[k - 1][1] - 1]
                    found.append((done[uses[rows[k][0]]] - done[last + 1], move))
        found.sort(key=lambda x: x[0])
        return [m for _, m in found]

    def improve(self):
        rng = random.Random(1)
        while self.left() > 0:
            fresh = [m for m in self.led() if m not in self.tried]
            batch = tuple({m[1:3]: m for m in reversed(fresh) if m[0] == "pre"}.values())
            if len(batch) > 1 and batch not in self.tried:  # every led one a step at once
                self.tried.add(batch)
                if self.offer(self.apply(*batch)):
                    continue
            if not fresh:
                fresh = self.merges()[:4]
            if not fresh:
                i = rng.randrange(len(self.tensors))
                k = rng.randrange(len(self.best.rows[i]))
                fresh = [m for m in self.moves(i, k) if m not in self.tried]
            for move in fresh:
                if self.left() <= 0:
                    return
                self.tried.add(move)
                if self.offer(self.apply(move)):
                    break


START = time.monotonic()


def main():
    case_dir, out_dir = os.environ["MEMORACE_CASE_DIR"], os.environ["MEMORACE_OUT_DIR"]
    with open(os.path.join(case_dir, "case.json")) as f:
        case = json.load(f)
    if not is_v2(case):
        os.execv(str(HERE / "strong_v1"), [str(HERE / "strong_v1")])
    limit = float(case.get("time_limit_s", 10))
    importable()
    search = Search(
        case, os.path.join(out_dir, "plan.json"), START + max(0.0, min(limit * 0.75, limit - 4))
    )
    g = search.g
    *plan, target = g.greedy_plan(case, search.tensors, search.kinds)
    cap = int(case["capacity"])
    if target is not None and target < cap - 11 * (cap // 25):
        target = None  # greedy went below 56 % (decode): the seeds bisect from half
    greedy = State(*plan)
    if not search.offer(greedy):  # greedy broke a rule (the host capacity): write it anyway
        search.write(g.plan_json(search.tensors, greedy.rows, greedy.offsets, greedy.leave,
                                 greedy.recomputed))  # fmt: skip
    try:
        if search.best is not None:
            search.paced_seeds(target)  # first: a paced plan is better for placing again
            search.replaced()
        search.ranked_seeds(target)
        if search.best is not None:
            search.replaced()
            search.improve()
    except Exception:  # a bug in the search must not lose the plan already written
        traceback.print_exc()
    print(f"{len(search.tried)} moves tried", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
