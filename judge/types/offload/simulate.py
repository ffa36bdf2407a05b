"""The exact timing of a statically valid `offload` plan (README.md, "Timing"): one
pass over the compute stream in order, O(n log n) in residencies, integer times in
units of 1/unit µs (unit = lcm of the bandwidths: every transfer time is an integer).

Speed (benchmarks/offload_v2_speed.py): every per-residency quantity is a Python list
made once; the events of all steps are sorted once into one list, with the bounds of
each (step, phase) run; a step without events costs one comparison."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from judge.types.offload.byte_owners import ByteOwners
from judge.types.offload.case import DEVICE, OffloadCase
from judge.types.offload.layout import FINAL_OUT, Layout, lay_out
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
from judge.types.offload.timing import Cause, Timing, say

NEVER = -1  # the release of a residency kept to the end
# The phases of one step, in the order they happen (README.md, "Timing")
WORK, PRODUCE, FETCH, FREE, COPY_OUT, ENCODE, COPY_IN = range(7)
PHASES = 7


def _durations(nbytes: np.ndarray, unit: int, bandwidth: int, latency: int) -> list[int]:
    """latency + bytes / bandwidth in units of 1/unit µs, exact (Python ints when int64
    could wrap)."""
    scale, fixed = unit // bandwidth, latency * unit
    if int(nbytes.max(initial=0)) * scale + fixed < 2**62:
        return (nbytes * scale + fixed).tolist()
    return [b * scale + fixed for b in nbytes.tolist()]


def _events(
    case: OffloadCase, plan: OffloadPlan, lay: Layout, mode: np.ndarray
) -> tuple[list[int], list[int]]:
    """(every residency event in the order it is handled, bounds): the events of phase
    f at step s are flat[bounds[7(s+1) + f] : bounds[7(s+1) + f + 1]] (s = -1: copy-ins
    before step 0); within one, decreasing priority, then plan order (copies) or plan
    order (the rest)."""
    rows, out = np.arange(len(plan)), lay.out
    prio = plan.priority if plan.priority is not None else np.zeros(len(plan), np.int64)
    copied_out = (out >= 0) & (out != OUT_DROP) & (out != OUT_COMPRESSED)
    kinds = [  # (step, which rows, ordered by priority) per phase
        (lay.at, (mode == RECOMPUTED) | lay.compressed_in, False),
        (lay.first, mode == PRODUCED, False),
        (lay.first, (mode == COPIED) & ~lay.compressed_in, False),
        (lay.last, (out == OUT_DROP) | ((out < 0) & lay.final), False),
        (lay.last, copied_out, True),
        (lay.last, out == OUT_COMPRESSED, False),
        (plan.prefetch, mode == COPIED, True),
    ]
    keys, ranks, who = [], [], []
    for phase, (step, mask, by_priority) in enumerate(kinds):
        r = rows[mask]  # in plan order, which the stable sorts below keep among equals
        keys.append((step[r] + 1) * PHASES + phase)
        ranks.append(-prio[r] if by_priority else np.zeros(len(r), np.int64))
        who.append(r)
    key, rank, row = np.concatenate(keys), np.concatenate(ranks), np.concatenate(who)
    order = np.lexsort((rank, key)) if rank.any() else np.argsort(key, kind="stable")
    bounds = np.searchsorted(key[order], np.arange(PHASES * (len(case.steps) + 1) + 1))
    return row[order].tolist(), bounds.tolist()


@dataclass
class _Engines:
    """The copy engines and device bytes (closures over per-residency lists: the hot
    path of the simulation, so no attribute lookups in it)."""

    unit: int
    copy_in: Callable[[int, int], None]  # (residency, issue time)
    copy_out: Callable[[int, int, bool], None]  # (residency, issue time, compressed)
    take: Callable[[int], tuple[int, int]]  # produce r: (its bytes free, last occupant)
    decode_ready: Callable[[int], tuple[int, Cause]]
    recompute_ready: Callable[[int, list[int]], tuple[int, Cause]]  # (r, its sources)
    busy_until: Callable[[], int]  # when the last copy ends
    copies: list[tuple[str, int, int, int]]
    in_end: list[int]  # copy-in end (h2d leg)
    release: list[int]  # when its bytes are free (NEVER: kept)


def _engines(case: OffloadCase, plan: OffloadPlan, lay: Layout) -> _Engines:
    nv = case.nvme
    unit = math.lcm(*([case.h2d, case.d2h] + ([nv.read_bw, nv.write_bw] if nv else [])))
    size = case.size[plan.tensor]
    csize = (case.csize if case.csize is not None else case.size)[plan.tensor]
    t_in = _durations(np.where(lay.compressed_in, csize, size), unit, case.h2d, case.h2d_latency)
    t_out = _durations(size, unit, case.d2h, case.d2h_latency)
    t_out_small = _durations(csize, unit, case.d2h, case.d2h_latency)
    t_read = _durations(size, unit, nv.read_bw, nv.read_latency) if nv else []
    t_write = _durations(size, unit, nv.write_bw, nv.write_latency) if nv else []
    end = plan.offset + size
    lo, hi = plan.offset.tolist(), end.tolist()
    in_lo = np.where(lay.compressed_in, end - csize, plan.offset).tolist()
    decode_hi = (end - csize).tolist()  # a decode takes [lo, decode_hi)
    parks_on_nvme = (lay.out == OUT_NVME).tolist()
    reads, from_nvme = lay.reads.tolist(), lay.from_nvme.tolist()
    n = len(plan)
    release, in_end = [0] * n, [0] * n
    out_end = [0] * n  # end of the copy-out that wrote the off-device copy
    ready = ByteOwners().ready
    copies: list[tuple[str, int, int, int]] = []
    d2h = h2d = nr = nw = 0  # when each engine is free

    def copy_out(r: int, issue: int, small: bool) -> None:
        nonlocal d2h, nw
        begin = issue if issue > d2h else d2h
        d2h = done = begin + (t_out_small[r] if small else t_out[r])
        copies.append(("d2h", r, begin, done))
        release[r] = out_end[r] = done
        if parks_on_nvme[r]:
            begin = done if done > nw else nw
            nw = out_end[r] = begin + t_write[r]
            copies.append(("nvme_write", r, begin, nw))

    def copy_in(r: int, issue: int) -> None:
        nonlocal h2d, nr
        q = reads[r]
        wrote = out_end[q] if q >= 0 else 0
        if from_nvme[r]:
            begin = max(issue, nr, wrote)
            nr = wrote = begin + t_read[r]
            copies.append(("nvme_read", r, begin, wrote))
        begin = ready(in_lo[r], hi[r], r, release)[0]
        if issue > begin:
            begin = issue
        if h2d > begin:
            begin = h2d
        if wrote > begin:
            begin = wrote
        h2d = in_end[r] = begin + t_in[r]
        copies.append(("h2d", r, begin, h2d))

    def take(r: int) -> tuple[int, int]:
        return ready(lo[r], hi[r], r, release)

    def decode_ready(r: int) -> tuple[int, Cause]:
        """When a decode may start (the rest of its bytes free, its copy-in done), and why."""
        a, z = lo[r], decode_hi[r]
        free, q = ready(a, z, r, release) if z > a else (0, -1)
        if in_end[r] > free:
            return in_end[r], ("decode in", r, -1)
        return free, ("decode bytes", r, q)

    def recompute_ready(r: int, sources: list[int]) -> tuple[int, Cause]:
        """When a recompute may start (its bytes free, its sources' copy-ins done), and why."""
        free, q = ready(lo[r], hi[r], r, release)
        why = ("recompute bytes", r, q)
        for j in sources:
            if in_end[j] > free:
                free, why = in_end[j], ("recompute source", r, j)
        return free, why

    def busy_until() -> int:
        return max(d2h, h2d, nr, nw)  # each engine's last copy ends last

    return _Engines(unit, copy_in, copy_out, take, decode_ready, recompute_ready, busy_until,
                    copies, in_end, release)  # fmt: skip


def simulate(case: OffloadCase, plan: OffloadPlan, lay: Layout | None = None) -> Timing:
    """The discrete-event timing of a statically valid plan (README.md, "Timing")."""
    lay = lay if lay is not None else lay_out(case, plan)
    e = _engines(case, plan, lay)
    unit, copy_in, copy_out, take, in_end, release = (
        e.unit, e.copy_in, e.copy_out, e.take, e.in_end, e.release
    )  # fmt: skip
    mode = plan.mode if plan.mode is not None else np.where(plan.index == 0, PRODUCED, COPIED)
    flat, bounds = _events(case, plan, lay, mode)
    kept = (lay.final & (case.end_tier()[plan.tensor] == DEVICE)).tolist()
    sources = lay.memo.get("sources") or source_residencies(case, plan, lay)
    tensor, steps, mode_l = plan.tensor.tolist(), case.steps.tolist(), mode.tolist()
    rcost = case.recompute_cost.tolist() if case.recompute_cost is not None else []
    dcost = case.decode.tolist() if case.decode is not None else []
    ecost = case.encode.tolist() if case.encode is not None else []
    step_start, step_end, stall, work = [], [], [], []
    causes: list[Cause | None] = []
    for r in flat[bounds[COPY_IN] : bounds[PHASES]]:
        copy_in(r, 0)
    free = 0  # when the compute stream is free
    for s in range(len(steps)):
        k = PHASES * (s + 1)
        if bounds[k] == bounds[k + PHASES]:  # nothing but the step itself
            step_start.append(free)
            free += steps[s] * unit
            step_end.append(free)
            causes.append(None)
            stall.append(0)
            continue
        b0, b1, b2, b3, b4, b5, b6, b7 = bounds[k : k + PHASES + 1]
        waited, cause = 0, None
        for r in flat[b0:b1]:  # decodes and recomputes run just before step s
            if mode_l[r] == RECOMPUTED:
                kind, cost = "recompute", rcost[tensor[r]]
                ready, why = e.recompute_ready(r, sources.get(r, []))
            else:
                kind, cost = "decode", dcost[tensor[r]]
                ready, why = e.decode_ready(r)
            begin = ready if ready > free else free
            if begin > free:
                waited, cause = waited + begin - free, why
            free = begin + cost * unit
            work.append((kind, r, begin, free))
        start = free
        for r in flat[b1:b2]:
            ready, q = take(r)
            if ready > start:
                start, cause = ready, ("bytes", r, q)
        for r in flat[b2:b3]:
            if in_end[r] > start:
                start, cause = in_end[r], ("in", r, -1)
        waited += start - free
        free = done = start + steps[s] * unit
        step_start.append(start)
        step_end.append(done)
        causes.append(cause)
        stall.append(waited)
        for r in flat[b3:b4]:
            release[r] = NEVER if kept[r] else done
        for r in flat[b4:b5]:
            copy_out(r, done, False)
        for r in flat[b5:b6]:
            begin, free = free, free + ecost[tensor[r]] * unit
            work.append(("encode", r, begin, free))
            copy_out(r, free, True)
        for r in flat[b6:b7]:  # copy-ins named "after step s" (issued when it ends)
            copy_in(r, done)
    end = max(free, e.busy_until())
    timing = Timing(unit, step_start, step_end, [], e.copies, work, stall, end)
    timing.causes, timing.named = causes, (case, plan)
    return timing


def group_by_step(plan: OffloadPlan, lay: Layout, n_steps: int) -> _Groups:
    """v1 plans: which residencies each step produces, fetches, releases, copies out and in
    (for the CUDA timing, judge.replay_cuda)."""

    def by(step: np.ndarray, mask: np.ndarray) -> list[list[int]]:
        return _by_step(step, np.flatnonzero(mask), n_steps)

    first = plan.index == 0
    return _Groups(
        produced=by(lay.first, first),
        fetched=by(lay.first, ~first),
        released=by(lay.last, lay.final),
        copied_out=by(lay.last, ~lay.final),
        copied_in=by(plan.prefetch, ~first),
    )


def _by_step(step: np.ndarray, rows: np.ndarray, n_steps: int) -> list[list[int]]:
    """rows by step (0 .. n_steps - 1; those at step -1 left out), each in plan order."""
    out: list[list[int]] = [[] for _ in range(n_steps)]
    for r, s in zip(rows.tolist(), step[rows].tolist(), strict=True):
        if s >= 0:
            out[s].append(r)
    return out


@dataclass
class _Groups:
    produced: list[list[int]]
    fetched: list[list[int]]
    released: list[list[int]]
    copied_out: list[list[int]]
    copied_in: list[list[int]]


__all__ = ["FINAL_OUT", "ByteOwners", "Timing", "group_by_step", "say", "simulate"]
