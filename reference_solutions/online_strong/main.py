#!/usr/bin/env python3
"""Strong online allocator: learns the iteration while it allocates; Python 3.11, numpy.

Policy.
1. Online best fit for every request that no plan covers (ties.SplitTies: best fit;
   the short-lived take the highest of equally good gaps: temporaries and inputs, and
   once KV caches are seen everything but them; measured on online-train, public and
   four hidden-like seeds, in benchmarks/online_lab: see SHORT_LIVED). It
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

7. Phases: iteration 0, which no iteration plan covers, is planned one level down
   by the same machinery (follower.Follower), when a `microbatch` hint is given. A unit
   is then one micro-batch's run of requests (a forward, a backward, or both on the
   last stage), split where the micro-batch changes, planned from the last unit of
   the same pattern (another micro-batch). What a phase frees within itself
   (temporaries, recomputed activations) is planned; what it hands on (activations)
   goes by best fit. Why: best fit leaves the big co-live tensors of a backward
   (attention scores: softmax, its gradient) no gap to share, e.g. 1.24 x the bound
   where planned phases reach 1.07-1.08. Micro-batches of one recorded step differ in
   batch and sequence length, and attention scores go with the square of the length,
   so sizes follow no single factor: any ratio in factors.WIDE matches, each size
   class is learnt as it comes, and a phase's plan waits for its micro-batch's first
   scaled request. Guards: a phase plan may not raise the peak unless best fit would
   raise it more (no 3 % grace: sizes are guessed); phases take at most PHASE_SHARE
   of the time limit; with a capacity (60 % above the lower bound in this problem)
   only phases that may come within RISK of the bound are planned. Not in later
   iterations: where a new step's phases followed the last step's, their plans did
   worse than best fit (1.078 x the bound against 1.046 on one case).

Without an iteration hint (and without `step`) the allocator is best fit. Measured:
benchmarks/online_calibration.py.

Protocol (judge/types/online/README.md): reads `capacity`, `hints`, then `a ID SIZE
ALIGNMENT HINTS...` (answer one offset line, flushed) and `f ID` lines until `end`.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # online_greedy.py: beside (archive) or above

from follower import Follower  # noqa: E402
from online_greedy import serve  # noqa: E402
from room import AdamRoom  # noqa: E402
from ties import SplitTies  # noqa: E402

MARKERS = ("iteration", "step")
PLAN_SHARE = 0.2  # of the time limit (12 s assumed without case.json)
PHASE_SHARE = 0.15  # ... for plans of micro-batch phases (at most)
HEADROOM = 1.6  # capacity = lower bound * HEADROOM, rounded up (the problem's rule)
RISK = 0.6  # of the lower bound: phases that may come this near it are planned
# Categories that take the highest of equally good gaps from the first request (ties.py):
# in training's first iteration, before anything is planned, this kept one hidden-like
# case's warm-up peak at 1.024 x the bound where lowest-first reached 1.049.
SHORT_LIVED = ("temporary", "input")


class Strong:
    def __init__(self, capacity: int, names: list[str]) -> None:
        self.bf = SplitTies(capacity)
        self.room = AdamRoom(self.bf)
        found = [names.index(m) for m in MARKERS if m in names]
        self.cat = names.index("category") if "category" in names else None
        self.mbx = names.index("microbatch") if "microbatch" in names else None
        self.kv_seen = False
        self.live: dict[str, int] = {}  # id -> size of what the trace has live
        self.live_bytes = 0
        # the lower bound, about (the capacity rule); None: no capacity was told
        self.bound = capacity / HEADROOM if capacity < 1 << 61 else None
        self.outer = Follower(self.bf, names, found[:1], PLAN_SHARE) if found else None
        self.inner = None  # micro-batch phases, planned in iteration 0 only
        if found and self.mbx is not None and PHASE_SHARE > 0:
            self.inner = Follower(self.bf, names, [found[0], self.mbx], PHASE_SHARE)

    # the protocol
    def alloc(self, bid: str, size: int, align: int, values: list[str]) -> int:
        cat = values[self.cat] if self.cat is not None else None
        mb = values[self.mbx] if self.mbx is not None else "-"
        self.kv_seen |= cat == "kv_cache"
        off = self.room.before(bid, size, align, cat)
        outer, inner = self.outer, self.inner
        if outer is not None:
            if outer.starts(values) and outer.value is not None:
                self.room.close()  # the first iteration is over
                self.inner = inner = None  # and so are phase plans
            outer.enter(values)
        if inner is not None and inner.starts(values):
            inner.enabled = self.at_risk()
            inner.enter(values)
        shares = off is None and self.room.shares(cat, mb)
        if shares:
            self.room.release()
        for f in (outer, inner):
            if f is not None:
                got = f.request(bid, size, align, values, off is not None)
                off = got if off is None else off
        if off is None:
            high = cat in SHORT_LIVED or (self.kv_seen and cat != "kv_cache")
            off = self.bf.alloc(bid, size, align, high)
        if shares:
            self.room.hold()
        self.live[bid] = size
        self.live_bytes += size
        return off

    def at_risk(self) -> bool:
        """Is the peak at stake in the phase beginning: may what is live now plus the
        largest phase seen come near the lower bound (capacity / HEADROOM; always true
        without a capacity)? Below it best fit does as well, for less time."""
        most = self.inner.most() if self.inner is not None else 0
        return self.bound is None or self.live_bytes + most >= RISK * self.bound

    def free(self, bid: str) -> None:
        reopens = self.room.covers(bid)
        self.bf.free(bid)
        self.live_bytes -= self.live.pop(bid)
        if reopens:
            self.room.hold()
        for f in (self.outer, self.inner):
            if f is not None:
                f.free(bid)


if __name__ == "__main__":
    serve(Strong)
