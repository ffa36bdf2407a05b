"""A provable lower bound on the makespan of any valid `offload` plan (README.md,
"Lower bound"): the compute stream, and each link that some bytes must cross."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from judge.types.offload.case_tensors import DEVICE, HOST, NVME

# OffloadCase is duck-typed here: the case reader calls lower_bound before it returns.


def lower_bound(case: Any) -> int:
    """The exact bound floored to whole µs (the score interface takes an int)."""
    exact = exact_lower_bound(case)
    return exact.numerator // exact.denominator


def exact_lower_bound(case: Any) -> Fraction:
    steps = case.steps.tolist()
    suffix = np.concatenate([np.cumsum(steps[::-1])[::-1], [0]]).tolist() if steps else [0]
    prefix = [0, *np.cumsum(steps).tolist()]
    start, end = case.start_tier().tolist(), case.end_tier().tolist()
    size = case.size.tolist()
    first = case.uses[case.use_start[:-1]].tolist()
    wc = np.concatenate([[0], np.cumsum(case.writes_mask())])
    # the last write of each tensor (index into uses), -1 when it is never written
    last_write = _last_true(case.writes_mask(), case.use_start)
    uses = case.uses.tolist()

    def d_in(t: int) -> Fraction:
        return case.h2d_latency + Fraction(size[t], case.h2d)

    def d_read(t: int) -> Fraction:
        return case.nvme.read_latency + Fraction(size[t], case.nvme.read_bw)

    bounds = [Fraction(prefix[-1])]
    fetched = [t for t in range(len(size)) if start[t] in (HOST, NVME)]
    if fetched:  # every tensor off the device at the start crosses h2d in full once
        bounds.append(sum(map(d_in, fetched)) + min(suffix[first[t]] for t in fetched))
    stored = [t for t in range(len(size)) if start[t] == NVME]
    if stored:  # ... and one on NVMe is read into the host first
        tail = min(d_in(t) + suffix[first[t]] for t in stored)
        bounds.append(sum(map(d_read, stored)) + tail)
    out: list[tuple[Fraction, Fraction]] = []
    for t in range(len(size)):
        written = int(wc[case.use_start[t + 1]] - wc[case.use_start[t]]) > 0
        w = last_write[t]
        if start[t] == DEVICE:  # its first use produces it: a write
            written, w = True, max(w, int(case.use_start[t]))
        if end[t] != HOST or (start[t] == HOST and not written):
            continue
        # its final bytes cross d2h in full, after its last write ends (or after it came in)
        ready = Fraction(prefix[uses[w] + 1]) if written else d_read(t) + d_in(t)
        out.append((ready, case.d2h_latency + Fraction(size[t], case.d2h)))
    if out:
        bounds.append(min(r for r, _ in out) + sum(d for _, d in out))
    for nvme in (False, True):
        refetch = _refetch_bound(case, prefix, nvme)
        if refetch is not None:
            bounds.append(refetch)
    return max(bounds)


# Window starts and ends are multiples of ceil(n / _BLOCKS) steps: an n x n table up to
# that size (any set of windows is a valid bound; coarser ones only a weaker one).
_BLOCKS = 1024


def _refetch_bound(case: Any, prefix: list[int], nvme: bool = False) -> Fraction | None:
    """The capacity term (README, "Lower bound"): in a window of steps [a, b], every
    tensor it uses that the device can neither produce nor recompute there is either
    held just after step a-1 (in at least its smallest form, so in all at most the
    capacity) or comes in over h2d by a copy issued after step a-1 for a use in the
    window: at least sum(smallest forms) - capacity bytes. Disjoint windows count
    distinct copies; those in windows from step a on start after steps 0..a-1 ran.
    The best set of disjoint windows is found by dynamic programming over (a, b).
    With `nvme` (the NVMe term, README): the tensors that start on NVMe, which the
    window reads from NVMe unless held on the device or in host memory just after a-1."""
    if nvme and (case.nvme is None or case.host_capacity is None):
        return None
    n = len(prefix) - 1
    if n == 0:
        return None  # no step, no window (the case reader refuses it; pictures still draw)
    room = case.capacity + (case.host_capacity if nvme else 0)
    need = _window_need(case, n, room, nvme)
    if need is None:
        return None
    k = -(-n // _BLOCKS)
    m = need.shape[0]
    best = np.zeros(m + 1, dtype=need.dtype)  # most bytes from disjoint windows in A..m-1
    for a in range(m - 1, -1, -1):
        best[a] = max(best[a + 1], (need[a, a:] + best[a + 1 :]).max())
    best = best.tolist()
    if best[0] == 0:
        return None
    bandwidth = case.nvme.read_bw if nvme else case.h2d
    return max(prefix[a * k] + Fraction(best[a], bandwidth) for a in range(m) if best[a] > 0)


def _window_need(case: Any, n: int, room: int, nvme: bool) -> np.ndarray | None:
    """need[A, B] = max(0, sum of the smallest forms of the tensors window [A, B] (in
    blocks) must have brought in or held - room): int64 when every sum of needs fits
    (m windows of at most all bytes), Python ints (object) otherwise."""
    size = case.size.tolist()
    csize = case.csize.tolist() if case.csize is not None else [0] * len(size)
    start = case.start_tier().tolist()
    cost = case.recompute_cost.tolist() if case.recompute_cost is not None else None
    k = -(-n // _BLOCKS)
    m = -(-n // k)
    least = [c if c > 0 else z for z, c in zip(size, csize, strict=True)]
    if room >= sum(least):
        return None
    wide = object if sum(least) * (m + 1) >= 2**62 else np.int64
    add = np.zeros((m + 1, m), dtype=wide)  # by window start (differences), by use block
    uses, bounds = case.uses.tolist(), case.use_start.tolist()
    for t in range(len(size)):
        mine = uses[bounds[t] : bounds[t + 1]]
        if nvme and start[t] != NVME:
            continue
        if start[t] != DEVICE:
            lo = -1  # fetched for any window
        elif cost is None or cost[t] < 0:
            lo = mine[0]  # made at its first use; fetched for windows starting later
        else:
            continue  # recomputable: a window may rebuild it
        prev = -1
        for u in mine:
            # windows starting at a in (max(prev, lo), u] meet it first at step u
            first_a, last_a = max(prev, lo) // k + 1, u // k
            if first_a <= last_a:
                add[first_a, u // k] += least[t]
                add[last_a + 1, u // k] -= least[t]
            prev = u
    held = np.cumsum(add, axis=0)[:m]  # held[A, U]: bytes first met in block U from A on
    total = np.cumsum(held, axis=1) - room
    total[total < 0] = 0
    return total if total.any() else None


def _last_true(mask: np.ndarray, starts: np.ndarray) -> list[int]:
    """Per segment [starts[i], starts[i+1]) of mask, the index of its last True (-1: none)."""
    idx = np.where(mask, np.arange(len(mask)), -1)
    best = np.maximum.accumulate(idx) if len(idx) else idx
    ends = starts[1:] - 1
    out = np.full(len(ends), -1, dtype=np.int64)
    nonempty = ends >= starts[:-1]
    out[nonempty] = best[ends[nonempty]]
    return np.where(out >= starts[:-1], out, -1).tolist()
