"""The exact timing of a statically valid `offload` plan (README.md, "Timing"): one
pass over the compute stream in order, O(n log n) in residencies, integer times in
units of 1/unit µs (unit = lcm of the bandwidths: every transfer time is an integer).

Speed (benchmarks/offload_v2_speed.py): the events of all steps are sorted once into
one list, with the bounds of each (step, phase) run; who held the bytes each event
takes is known before the loop (occupants.py: the order of takes is fixed); every
per-residency quantity is a Python list made once; the loop is one function."""

from __future__ import annotations

import gc
import math
from dataclasses import dataclass

import numpy as np

from judge.types.offload.byte_owners import ByteOwners
from judge.types.offload.case import DEVICE, OffloadCase
from judge.types.offload.layout import FINAL_OUT, Layout, lay_out
from judge.types.offload.occupants import previous
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
from judge.types.offload.timing import Cause, Interval, Timing, say
from judge.types.offset.sort_keys import stable_order

# The phases of one step, in the order they happen (README.md, "Timing")
WORK, PRODUCE, FETCH, FREE, COPY_OUT, ENCODE, COPY_IN = range(7)
PHASES = 7


def _exact(
    values: np.ndarray, scale: int, add: int = 0, mask: np.ndarray | None = None
) -> list[int]:
    """values * scale + add for values >= 0 (0 where mask is False), exact: int64
    arithmetic only where every operand and result provably fits, Python ints (the same
    arithmetic) otherwise. scale and add are checked too: with no values, or all 0, a
    unit past int64 (the lcm of four bandwidths up to 2^62) must not reach numpy."""
    if scale < 2**62 and add < 2**62 and int(values.max(initial=0)) * scale + add < 2**62:
        out = values * scale + add
        return (out if mask is None else np.where(mask, out, 0)).tolist()
    keep = [True] * len(values) if mask is None else mask.tolist()
    return [v * scale + add if k else 0 for v, k in zip(values.tolist(), keep, strict=True)]


def _durations(
    nbytes: np.ndarray, unit: int, bandwidth: int, latency: int, mask: np.ndarray | None = None
) -> list[int]:
    """latency + bytes / bandwidth in units of 1/unit µs (an integer: bandwidth divides
    unit); 0 where mask is False."""
    return _exact(nbytes, unit // bandwidth, latency * unit, mask)


def _events(
    case: OffloadCase, plan: OffloadPlan, lay: Layout, mode: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """(every residency event in the order it is handled, its key 7(s+1) + f, bounds):
    the events of phase f at step s are flat[bounds[7(s+1) + f] : bounds[7(s+1) + f + 1]]
    (s = -1: copy-ins before step 0); within one, decreasing priority, then plan order
    (copies) or plan order (the rest)."""
    out = lay.out
    kept = lay.final & (case.end_tier()[plan.tensor] == DEVICE)  # never released
    prio = plan.priority if plan.priority is not None else np.zeros(len(plan), np.int64)
    copied_out = (out >= 0) & (out != OUT_DROP) & (out != OUT_COMPRESSED)
    kinds = [  # (step, which rows, ordered by priority) per phase
        (lay.at, (mode == RECOMPUTED) | lay.compressed_in, False),
        (lay.first, mode == PRODUCED, False),
        (lay.first, (mode == COPIED) & ~lay.compressed_in, False),
        (lay.last, (out == OUT_DROP) | ((out < 0) & lay.final & ~kept), False),
        (lay.last, copied_out, True),
        (lay.last, out == OUT_COMPRESSED, False),
        (plan.prefetch, mode == COPIED, True),
    ]
    keys, who = [], []
    for phase, (step, mask, by_priority) in enumerate(kinds):
        r = np.flatnonzero(mask)  # plan order, which the stable sorts below keep among equals
        if by_priority and len(r):
            r = r[stable_order(-prio[r])]
        keys.append((step[r] + 1) * PHASES + phase)
        who.append(r)
    key, row = np.concatenate(keys), np.concatenate(who)
    size = PHASES * (len(case.steps) + 1)
    if len(key) and int(key.min()) < 0:  # no such event in a valid plan; left out as before
        key, row = key[key >= 0], row[key >= 0]
    bounds = np.concatenate([[0], np.cumsum(np.bincount(key, minlength=size))])
    order = stable_order(key)
    return row[order], key[order], bounds.tolist()


@dataclass
class _Columns:
    """Per-residency Python lists (exact ints) that the event loop reads; durations and
    costs already in units of 1/unit µs."""

    unit: int
    held: list[int]  # who last held the bytes it takes when it comes in (n: nobody;
    held_decode: list[int]  # SEVERAL: see several); its decode's (the first bytes)
    several: dict[int, list[int]]  # -> (residency, 0 in or 1 decode): those, byte order
    t_in: list[int]  # h2d leg
    t_out: list[int]  # d2h leg (of the compressed bytes when parked compressed)
    t_read: list[int]  # NVMe read leg; 0: not copied in from NVMe
    t_write: list[int]  # NVMe write leg; 0: not parked on NVMe
    reads: list[int]  # whose copy-out made what its copy-in reads; n: none
    work: list[int]  # its decode or recompute
    encode: list[int]
    durations: list[int]  # 0 (the moment before step 0), then each step
    sources: dict[int, list[int]]  # recomputed residency -> the source residencies it reads


def _scaled(values: np.ndarray, unit: int) -> list[int]:
    """values * unit, exact."""
    return _exact(values, unit)


def _holders(
    case: OffloadCase, plan: OffloadPlan, lay: Layout, mode: np.ndarray, rows: np.ndarray,
    key: np.ndarray,
) -> tuple[list[int], list[int], dict[int, list[int]]]:  # fmt: skip
    """The bytes each event takes, in the order the timing handles them (a produced,
    copied-in or recomputed residency: all its bytes, or the last compressed-size ones
    when copied in compressed; a decode: the rest), and who held them before."""
    n, phase = len(plan), key % PHASES
    size = case.size[plan.tensor][rows]
    lo = plan.offset[rows]
    hi = lo + size
    csize = case.csize[plan.tensor][rows] if case.csize is not None else size
    work = phase == WORK
    decode = work & (mode[rows] != RECOMPUTED)
    comes_in = (phase == PRODUCE) | (phase == COPY_IN) | (work & ~decode)
    head = decode & (csize < size)  # a decode of all the bytes takes none
    squeezed = (phase == COPY_IN) & lay.compressed_in[rows]
    takes = np.flatnonzero(comes_in | head)
    start = np.where(squeezed, hi - csize, lo)[takes]
    end = np.where(head, hi - csize, hi)[takes]
    found, several = previous(start, end, rows[takes], n)
    held, held_decode = np.full(n, n, np.int64), np.full(n, n, np.int64)
    is_in = comes_in[takes]
    held[rows[takes[is_in]]] = found[is_in]
    held_decode[rows[takes[~is_in]]] = found[~is_in]
    by_row = {2 * int(rows[takes[k]]) + int(not is_in[k]): qs for k, qs in several.items()}
    return held.tolist(), held_decode.tolist(), by_row


def _columns(case: OffloadCase, plan: OffloadPlan, lay: Layout, mode: np.ndarray,
             holders: tuple[list[int], list[int], dict[int, list[int]]]) -> _Columns:  # fmt: skip
    nv, n = case.nvme, len(plan)
    unit = math.lcm(*([case.h2d, case.d2h] + ([nv.read_bw, nv.write_bw] if nv else [])))
    size = case.size[plan.tensor]
    csize = (case.csize if case.csize is not None else case.size)[plan.tensor]
    small_out = lay.out == OUT_COMPRESSED
    parked = lay.out == OUT_NVME
    t_read = _durations(size, unit, nv.read_bw, nv.read_latency, lay.from_nvme) if nv else [0] * n
    t_write = _durations(size, unit, nv.write_bw, nv.write_latency, parked) if nv else [0] * n
    zero = np.zeros(len(case), np.int64)
    rcost, dcost, ecost = (
        a if a is not None else zero for a in (case.recompute_cost, case.decode, case.encode)
    )
    work = np.where(mode == RECOMPUTED, rcost[plan.tensor], dcost[plan.tensor])
    return _Columns(
        unit, *holders,
        _durations(np.where(lay.compressed_in, csize, size), unit, case.h2d, case.h2d_latency),
        _durations(np.where(small_out, csize, size), unit, case.d2h, case.d2h_latency),
        t_read, t_write,
        np.where(lay.reads >= 0, lay.reads, n).tolist(),
        _scaled(work, unit), _scaled(ecost[plan.tensor], unit),
        [0, *_scaled(case.steps, unit)],
        lay.memo.get("sources") or source_residencies(case, plan, lay),
    )  # fmt: skip


def simulate(case: OffloadCase, plan: OffloadPlan, lay: Layout | None = None) -> Timing:
    """The discrete-event timing of a statically valid plan (README.md, "Timing")."""
    lay = lay if lay is not None else lay_out(case, plan)
    mode = plan.mode if plan.mode is not None else np.where(plan.index == 0, PRODUCED, COPIED)
    rows, key, bounds = _events(case, plan, lay, mode)
    holders = _holders(case, plan, lay, mode, rows, key)
    columns = _columns(case, plan, lay, mode, holders)
    paused = gc.isenabled()  # the loop makes a tuple per stall cause, none cyclic:
    gc.disable()  # collections on the way would only walk the lists it is filling
    try:
        timing = _run(columns, rows.tolist(), bounds)
    finally:
        if paused:
            gc.enable()
    timing.named = (case, plan)
    return timing


def _latest(holders: list[int], release: list[int]) -> tuple[int, int]:
    """(the latest release among holders, which one): (0, -1) when none after 0; the
    first wins ties."""
    best, who = 0, -1
    for q in holders:
        if release[q] > best:
            best, who = release[q], q
    return best, who


def _run(c: _Columns, flat: list[int], bounds: list[int]) -> Timing:
    """The event loop: one function with every list a local, because it is the hot path.
    j = s + 1: the moment before step 0 (j = 0) is a step of 0 µs with only copy-ins.
    A release of 0 or less never delays anything (nothing starts before 0)."""
    held, held_decode, several = c.held, c.held_decode, c.several
    t_in, t_out, t_read, t_write, reads = c.t_in, c.t_out, c.t_read, c.t_write, c.reads
    work_cost, encode_cost, dur, sources = c.work, c.encode, c.durations, c.sources
    n, m = len(held), len(dur)
    release, in_end, out_end = [0] * (n + 1), [0] * n, [0] * (n + 1)  # [n]: nobody's
    # when each leg and work item of a residency begins (its end: begin + duration)
    h2d_at, d2h_at, read_at, write_at, work_at, encode_at = ([0] * n for _ in range(6))
    step_start, step_end, stall = [0] * m, [0] * m, [0] * m
    causes: list[Cause | None] = [None] * m
    free = d2h = h2d = nr = nw = 0  # when the compute stream and each engine are free
    phases = [bounds[f::PHASES] for f in range(PHASES + 1)]  # zip: no slice per step
    for j, b0, b1, b2, b3, b4, b5, b6, b7 in zip(range(m), *phases, strict=False):
        if b0 == b7:  # nothing but the step itself
            step_start[j] = free
            free += dur[j]
            step_end[j] = free
            continue
        waited, cause = 0, None
        for r in flat[b0:b1]:  # decodes and recomputes run just before the step
            src = sources.get(r)
            if src is not None:  # a recompute: its bytes, its sources' copy-ins
                q = held[r]
                ready, q = (release[q], q) if q >= 0 else _latest(several[2 * r], release)
                why = -1
                for x in src:
                    if in_end[x] > ready:
                        ready, why = in_end[x], x
                if ready > free:
                    waited += ready - free
                    free = ready
                    cause = ("recompute source", r, why) if why >= 0 else ("recompute bytes", r, q)
                work_at[r] = free
            else:  # a decode: the rest of its bytes, its copy-in
                q = held_decode[r]
                ready, q = (release[q], q) if q >= 0 else _latest(several[2 * r + 1], release)
                if in_end[r] > ready:
                    ready, q = in_end[r], -2
                if ready > free:
                    waited += ready - free
                    free = ready
                    cause = ("decode in", r, -1) if q == -2 else ("decode bytes", r, q)
                work_at[r] = free
            free += work_cost[r]
        start = free
        for r in flat[b1:b2]:  # produced in the step: their bytes
            q = held[r]
            ready, q = (release[q], q) if q >= 0 else _latest(several[2 * r], release)
            if ready > start:
                start, cause = ready, ("bytes", r, q)
        for r in flat[b2:b3]:  # fetched for the step: their copy-ins
            if in_end[r] > start:
                start, cause = in_end[r], ("in", r, -1)
        waited += start - free
        free = done = start + dur[j]
        step_start[j], step_end[j], stall[j], causes[j] = start, done, waited, cause
        for r in flat[b3:b4]:  # dropped, or ends nowhere: free when the step ends
            release[r] = done
        for r in flat[b4:b5]:  # copied out (to the host, or on to NVMe)
            d2h_at[r] = begin = done if done > d2h else d2h
            d2h = release[r] = out_end[r] = begin + t_out[r]
            if t_write[r]:
                write_at[r] = begin = d2h if d2h > nw else nw
                nw = out_end[r] = begin + t_write[r]
        for r in flat[b5:b6]:  # encoded, then copied out compressed
            encode_at[r] = free
            free += encode_cost[r]
            d2h_at[r] = begin = free if free > d2h else d2h
            d2h = release[r] = out_end[r] = begin + t_out[r]
        for r in flat[b6:b7]:  # copy-ins named "after step s" (issued when it ends)
            wrote = out_end[reads[r]]
            if t_read[r]:
                begin = done if done > nr else nr
                if wrote > begin:
                    begin = wrote
                read_at[r] = begin
                nr = wrote = begin + t_read[r]
            q = held[r]
            begin = release[q] if q >= 0 else _latest(several[2 * r], release)[0]
            if done > begin:
                begin = done
            if h2d > begin:
                begin = h2d
            if wrote > begin:
                begin = wrote
            h2d_at[r] = begin
            h2d = in_end[r] = begin + t_in[r]
    end = max(free, d2h, h2d, nr, nw)  # each engine's last copy ends last

    def lists() -> tuple[list[Interval], list[Interval]]:
        """(copies, work) in the order the loop met them."""
        copies: list[Interval] = []
        work: list[Interval] = []
        for _, b0, b1, _, _, b4, b5, b6, b7 in zip(range(m), *phases, strict=False):
            for r in flat[b0:b1]:
                kind = "recompute" if r in sources else "decode"
                work.append((kind, r, work_at[r], work_at[r] + work_cost[r]))
            for r in flat[b4:b5]:
                copies.append(("d2h", r, d2h_at[r], d2h_at[r] + t_out[r]))
                if t_write[r]:
                    copies.append(("nvme_write", r, write_at[r], write_at[r] + t_write[r]))
            for r in flat[b5:b6]:
                work.append(("encode", r, encode_at[r], encode_at[r] + encode_cost[r]))
                copies.append(("d2h", r, d2h_at[r], d2h_at[r] + t_out[r]))
            for r in flat[b6:b7]:
                if t_read[r]:
                    copies.append(("nvme_read", r, read_at[r], read_at[r] + t_read[r]))
                copies.append(("h2d", r, h2d_at[r], in_end[r]))
        return copies, work

    timing = Timing(c.unit, step_start[1:], step_end[1:], [], stall[1:], end, causes[1:])
    timing.make_lists = lists
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
