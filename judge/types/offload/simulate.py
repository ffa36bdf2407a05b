"""The exact timing of a statically valid `offload` plan (README.md, "Timing"): one
pass over the compute stream in order, O(n log n) in residencies, integer times in
units of 1/unit µs (unit = lcm of the bandwidths: every transfer time is an integer)."""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

import numpy as np

from judge.types.offload.case import DEVICE, OffloadCase
from judge.types.offload.layout import FINAL_OUT, Layout, lay_out, residency_name
from judge.types.offload.plan import (
    COPIED,
    OUT_COMPRESSED,
    OUT_DROP,
    OUT_NVME,
    PRODUCED,
    RECOMPUTED,
    OffloadPlan,
)  # fmt: skip
from judge.types.offload.rules import source_residencies

NEVER = -1  # the release of a residency kept to the end


@dataclass
class Timing:
    """Times in units of 1/unit µs."""

    unit: int
    step_start: list[int]
    step_end: list[int]
    stall_cause: list[str]  # why each step waited, when given in words; else see cause()
    # (engine "d2h" | "h2d" | "nvme_read" | "nvme_write", residency, start, end)
    copies: list[tuple[str, int, int, int]] = field(default_factory=list)
    # (kind "encode" | "decode" | "recompute", residency, start, end) on the compute stream
    work: list[tuple[str, int, int, int]] = field(default_factory=list)
    stall: list[int] = field(default_factory=list)  # waiting before each step, in units
    end: int = 0  # when the last step or copy ends
    causes: list[Cause | None] = field(default_factory=list, repr=False)
    named: tuple[OffloadCase, OffloadPlan] | None = field(default=None, repr=False)

    def cause(self, s: int) -> str:
        """Why step s (or the work just before it) waited, in words ("" if it did not)."""
        if self.stall_cause:
            return self.stall_cause[s]
        if not self.named or not self.stall[s]:
            return ""
        return say(*self.named, self.causes[s])

    @property
    def makespan(self) -> int:
        return self.end

    @property
    def makespan_us(self) -> float:
        return self.makespan / self.unit

    def summary(self, case: OffloadCase, plan: OffloadPlan) -> str:
        """Where the time went, for a contestant who wants to know what cost points."""
        total = sum(self.stall)
        span = f"makespan {self.makespan_us:.3f} µs"
        tail = self.end - (self.step_end[-1] if self.step_end else 0)
        after = (
            f"; the last copy ends {tail / self.unit:.3f} µs after the last step" if tail else ""
        )
        if not total:
            return f"{span}, no stall: no step or work on the compute stream waited{after}"
        worst, s = max((d, s) for s, d in enumerate(self.stall))
        return (
            f"{span}, of which {total / self.unit:.3f} µs stalled; the longest stall, "
            f"{worst / self.unit:.3f} µs before step {s}: {self.cause(s)}{after}"
        )


class ByteOwners:
    """Disjoint byte segments, each with the residency that last occupied it."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.owners: list[int] = []

    def take(self, start: int, end: int, owner: int) -> list[int]:
        """Make `owner` the occupant of [start, end); return the previous occupants."""
        i = bisect.bisect_right(self.starts, start) - 1
        if i >= 0 and self.starts[i] == start and self.ends[i] == end:  # the same bytes again
            previous = [self.owners[i]]
            self.owners[i] = owner
            return previous
        if i < 0 or self.ends[i] <= start:
            i += 1
        j = i
        previous = []
        while j < len(self.starts) and self.starts[j] < end:
            previous.append(self.owners[j])
            j += 1
        keep: list[tuple[int, int, int]] = []
        if i < j and self.starts[i] < start:  # the left remainder of a cut segment
            keep.append((self.starts[i], start, self.owners[i]))
        keep.append((start, end, owner))
        if i < j and self.ends[j - 1] > end:  # the right remainder
            keep.append((end, self.ends[j - 1], self.owners[j - 1]))
        self.starts[i:j] = [k[0] for k in keep]
        self.ends[i:j] = [k[1] for k in keep]
        self.owners[i:j] = [k[2] for k in keep]
        return previous


def _buckets(step: np.ndarray, rows: np.ndarray, priority: np.ndarray, n: int) -> list[list[int]]:
    """rows by step (bucket s + 1 holds step s; bucket 0 is "before step 0"), each bucket
    in decreasing priority, then plan order."""
    order = rows[np.lexsort((rows, -priority[rows], step[rows]))]
    flat, keys = order.tolist(), step[order] + 1
    buckets, first = np.unique(keys, return_index=True)
    empty: list[int] = []
    out = [empty] * (n + 1)  # steps without rows share one empty list (most steps)
    stops = [*first[1:].tolist(), len(flat)] if len(flat) else []
    for b, lo, hi in zip(buckets.tolist(), first.tolist(), stops, strict=True):
        out[b] = flat[lo:hi]
    return out


Cause = tuple[str, int, int]  # (what, residency, the one it waits for): worded only if shown
_SAY = {
    "bytes": "{t} waits for the bytes of {q}",
    "in": "waiting for the copy-in of {r}",
    "recompute bytes": "the recompute of {r} waits for the bytes of {q}",
    "recompute source": "the recompute of {r} waits for the copy-in of {q}",
    "decode bytes": "the decode of {r} waits for the bytes of {q}",
    "decode in": "the decode of {r} waits for its copy-in",
}


def say(case: OffloadCase, plan: OffloadPlan, cause: Cause | None) -> str:
    if cause is None:
        return ""
    what, r, q = cause
    return _SAY[what].format(
        t=case.ids[int(plan.tensor[r])],
        r=residency_name(case, plan, r),
        q=residency_name(case, plan, q) if q >= 0 else "",
    )


def _durations(nbytes: np.ndarray, unit: int, bandwidth: int, latency: int) -> list[int]:
    """latency + bytes / bandwidth in units of 1/unit µs, exact (Python ints when int64
    could wrap)."""
    scale, fixed = unit // bandwidth, latency * unit
    if int(nbytes.max(initial=0)) * scale + fixed < 2**62:
        return (nbytes * scale + fixed).tolist()
    return [b * scale + fixed for b in nbytes.tolist()]


class _Sim:
    def __init__(self, case: OffloadCase, plan: OffloadPlan, lay: Layout) -> None:
        self.case, self.plan, self.lay = case, plan, lay
        nv = case.nvme
        bws = [case.h2d, case.d2h] + ([nv.read_bw, nv.write_bw] if nv else [])
        self.unit = unit = math.lcm(*bws)
        size = case.size[plan.tensor]
        csize = case.csize if case.csize is not None else case.size
        moved = np.where(lay.compressed_in, csize[plan.tensor], size)
        self.t_in = _durations(moved, unit, case.h2d, case.h2d_latency)
        self.t_out = _durations(size, unit, case.d2h, case.d2h_latency)
        self.t_out_small = _durations(csize, unit, case.d2h, case.d2h_latency)
        if nv:
            self.t_read = _durations(size, unit, nv.read_bw, nv.read_latency)
            self.t_write = _durations(size, unit, nv.write_bw, nv.write_latency)
        self.tensor, self.offset = plan.tensor.tolist(), plan.offset.tolist()
        self.size, self.csize = case.size.tolist(), csize.tolist()
        self.parks_on_nvme = (lay.out == OUT_NVME).tolist()
        self.reads, self.from_nvme = lay.reads.tolist(), lay.from_nvme.tolist()
        self.compressed_in = lay.compressed_in.tolist()
        n = len(plan)
        self.release = [0] * n
        self.in_end = [0] * n  # copy-in end (h2d leg)
        self.out_end = [0] * n  # end of the copy-out that wrote the off-device copy
        self.owners = ByteOwners()
        self.d2h = self.h2d = self.nr = self.nw = 0  # when each engine is free
        self.copies: list[tuple[str, int, int, int]] = []
        self.work: list[tuple[str, int, int, int]] = []

    def bytes_ready(self, r: int, lo: int, hi: int) -> tuple[int, int]:
        """Take [lo, hi) for r: (when the previous occupants released them, which one)."""
        best, who = 0, -1
        release = self.release
        for q in self.owners.take(lo, hi, r):
            if release[q] > best:
                best, who = release[q], q
        return best, who

    def recompute_ready(self, r: int, sources: dict[int, list[int]]) -> tuple[int, Cause]:
        """When a recompute may start (its bytes free, its sources' copy-ins done), and why."""
        lo = self.offset[r]
        ready, q = self.bytes_ready(r, lo, lo + self.size[self.tensor[r]])
        why = ("recompute bytes", r, q)
        for j in sources.get(r, ()):
            if self.in_end[j] > ready:
                ready, why = self.in_end[j], ("recompute source", r, j)
        return ready, why

    def decode_ready(self, r: int) -> tuple[int, Cause]:
        """When a decode may start (the rest of its bytes free, its copy-in done), and why."""
        t, lo = self.tensor[r], self.offset[r]
        hi = lo + self.size[t] - self.csize[t]
        ready, q = self.bytes_ready(r, lo, hi) if hi > lo else (0, -1)
        why = ("decode bytes", r, q)
        if self.in_end[r] > ready:
            ready, why = self.in_end[r], ("decode in", r, -1)
        return ready, why

    def copy_out(self, r: int, issue: int, small: bool) -> None:
        begin = max(issue, self.d2h)
        self.d2h = end = begin + (self.t_out_small[self.tensor[r]] if small else self.t_out[r])
        self.copies.append(("d2h", r, begin, end))
        self.release[r] = self.out_end[r] = end
        if self.parks_on_nvme[r]:
            begin = max(end, self.nw)
            self.nw = self.out_end[r] = begin + self.t_write[r]
            self.copies.append(("nvme_write", r, begin, self.nw))

    def copy_in(self, r: int, issue: int) -> None:
        t, q = self.tensor[r], self.reads[r]
        wrote = self.out_end[q] if q >= 0 else 0
        if self.from_nvme[r]:
            begin = max(issue, self.nr, wrote)
            self.nr = wrote = begin + self.t_read[r]
            self.copies.append(("nvme_read", r, begin, self.nr))
        end = self.offset[r] + self.size[t]
        lo = end - self.csize[t] if self.compressed_in[r] else self.offset[r]
        ready, _ = self.bytes_ready(r, lo, end)
        begin = max(issue, self.h2d, wrote, ready)
        self.h2d = self.in_end[r] = begin + self.t_in[r]
        self.copies.append(("h2d", r, begin, self.h2d))


def simulate(case: OffloadCase, plan: OffloadPlan, lay: Layout | None = None) -> Timing:
    """The discrete-event timing of a statically valid plan (README.md, "Timing")."""
    lay = lay if lay is not None else lay_out(case, plan)
    sim = _Sim(case, plan, lay)
    n_steps, unit = len(case.steps), sim.unit
    rows = np.arange(len(plan))
    prio = plan.priority if plan.priority is not None else np.zeros(len(plan), np.int64)
    mode = plan.mode if plan.mode is not None else np.where(plan.index == 0, PRODUCED, COPIED)
    out, zero = lay.out, np.zeros(len(plan), np.int64)
    copied_out = (out >= 0) & (out != OUT_DROP) & (out != OUT_COMPRESSED)
    produced = _buckets(lay.first, rows[mode == PRODUCED], zero, n_steps)
    fetched = _buckets(lay.first, rows[(mode == COPIED) & ~lay.compressed_in], zero, n_steps)
    before = _buckets(lay.at, rows[(mode == RECOMPUTED) | lay.compressed_in], zero, n_steps)
    outs = _buckets(lay.last, rows[copied_out], prio, n_steps)
    encodes = _buckets(lay.last, rows[out == OUT_COMPRESSED], zero, n_steps)
    ins = _buckets(plan.prefetch, rows[mode == COPIED], prio, n_steps)
    freed = _buckets(lay.last, rows[(out == OUT_DROP) | ((out < 0) & lay.final)], zero, n_steps)
    kept = (lay.final & (case.end_tier()[plan.tensor] == DEVICE)).tolist()
    sources = lay.memo.get("sources") or source_residencies(case, plan, lay)
    tensor, offset, size, in_end = sim.tensor, sim.offset, sim.size, sim.in_end
    steps, mode_l = case.steps.tolist(), mode.tolist()
    rcost = case.recompute_cost.tolist() if case.recompute_cost is not None else []
    dcost = case.decode.tolist() if case.decode is not None else []
    ecost = case.encode.tolist() if case.encode is not None else []
    step_start, step_end, stall = [], [], []
    causes: list[Cause | None] = []
    for r in ins[0]:
        sim.copy_in(r, 0)
    free = 0  # when the compute stream is free
    for s in range(n_steps):
        b = s + 1
        waited, cause = 0, None
        for r in before[b]:  # decodes and recomputes run just before step s
            t = tensor[r]
            if mode_l[r] == RECOMPUTED:
                kind, cost, (ready, why) = "recompute", rcost[t], sim.recompute_ready(r, sources)
            else:
                kind, cost, (ready, why) = "decode", dcost[t], sim.decode_ready(r)
            begin = max(free, ready)
            if begin > free:
                waited, cause = waited + begin - free, why
            free = begin + cost * unit
            sim.work.append((kind, r, begin, free))
        start = free
        for r in produced[b]:
            ready, q = sim.bytes_ready(r, offset[r], offset[r] + size[tensor[r]])
            if ready > start:
                start, cause = ready, ("bytes", r, q)
        for r in fetched[b]:
            if in_end[r] > start:
                start, cause = in_end[r], ("in", r, -1)
        waited += start - free
        free = start + steps[s] * unit
        step_start.append(start)
        step_end.append(free)
        causes.append(cause)
        stall.append(waited)
        for r in freed[b]:
            sim.release[r] = NEVER if kept[r] else free
        for r in outs[b]:
            sim.copy_out(r, free, False)
        for r in encodes[b]:
            begin, free = free, free + ecost[tensor[r]] * unit
            sim.work.append(("encode", r, begin, free))
            sim.copy_out(r, free, True)
        for r in ins[b]:  # copy-ins named "after step s" (issued when it ends)
            sim.copy_in(r, step_end[s])
    end = max([free, *(c[3] for c in sim.copies)])
    timing = Timing(unit, step_start, step_end, [], sim.copies, sim.work, stall, end)
    timing.causes, timing.named = causes, (case, plan)
    return timing


def group_by_step(plan: OffloadPlan, lay: Layout, n_steps: int) -> _Groups:
    """v1 plans: which residencies each step produces, fetches, releases, copies out and in
    (for the CUDA timing, judge.replay_cuda)."""

    def by(step: np.ndarray, mask: np.ndarray) -> list[list[int]]:
        return _buckets(step, np.flatnonzero(mask), np.zeros(len(plan), np.int64), n_steps)[1:]

    first = plan.index == 0
    return _Groups(
        produced=by(lay.first, first),
        fetched=by(lay.first, ~first),
        released=by(lay.last, lay.final),
        copied_out=by(lay.last, ~lay.final),
        copied_in=by(plan.prefetch, ~first),
    )


@dataclass
class _Groups:
    produced: list[list[int]]
    fetched: list[list[int]]
    released: list[list[int]]
    copied_out: list[list[int]]
    copied_in: list[list[int]]


__all__ = ["FINAL_OUT", "ByteOwners", "Timing", "group_by_step", "simulate"]
