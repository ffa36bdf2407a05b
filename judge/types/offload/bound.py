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
    refetch = _refetch_bound(case, prefix)
    if refetch is not None:
        bounds.append(refetch)
    return max(bounds)


def _refetch_bound(case: Any, prefix: list[int]) -> Fraction | None:
    """The capacity term (README, "Lower bound"): cut the steps into windows, each closed
    just before a step that uses a tensor the window already used. In a window [a, b],
    every tensor it uses that the device can neither produce nor recompute there is
    either held just after step a-1 (in at least its smallest form, so in all at most
    the capacity) or comes in over h2d by a copy issued after step a-1: at least
    sum(smallest forms) - capacity bytes, in copies that start after steps 0..a-1 ran."""
    n = len(case.size)
    size = case.size.tolist()
    csize = case.csize.tolist() if case.csize is not None else [0] * n
    least = [c if c > 0 else s for s, c in zip(size, csize, strict=True)]
    start = case.start_tier().tolist()
    cost = case.recompute_cost.tolist() if case.recompute_cost is not None else [-1] * n
    counts = np.diff(case.use_start)
    owner = np.repeat(np.arange(n), counts)
    order = np.argsort(case.uses, kind="stable")
    steps_of, owners = case.uses[order].tolist(), owner[order].tolist()
    first = case.uses[case.use_start[:-1]].tolist()
    total, first_cut, seen, a, prev = 0, None, set(), 0, -1

    def close(a: int) -> None:
        nonlocal total, first_cut
        fetched = (t for t in seen if start[t] != DEVICE or (first[t] < a and cost[t] < 0))
        need = sum(least[t] for t in fetched) - case.capacity
        if need > 0:
            total += need
            first_cut = a if first_cut is None else first_cut

    for x, t in zip(steps_of, owners, strict=True):
        if t in seen and x != prev:
            close(a)
            seen, a = set(), x
        seen.add(t)
        prev = x
    close(a)
    if first_cut is None:
        return None
    return prefix[first_cut] + Fraction(total, case.h2d)


def _last_true(mask: np.ndarray, starts: np.ndarray) -> list[int]:
    """Per segment [starts[i], starts[i+1]) of mask, the index of its last True (-1: none)."""
    idx = np.where(mask, np.arange(len(mask)), -1)
    best = np.maximum.accumulate(idx) if len(idx) else idx
    ends = starts[1:] - 1
    out = np.full(len(ends), -1, dtype=np.int64)
    nonempty = ends >= starts[:-1]
    out[nonempty] = best[ends[nonempty]]
    return np.where(out >= starts[:-1], out, -1).tolist()
