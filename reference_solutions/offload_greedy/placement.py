"""Offsets for the residencies (step 4 of offload_greedy.py's overview): each
residency's window of points, first fit in order of first point (the lowest hole that
fits, alignment kept), and the last resort, each step's residencies side by side.

Why a module of its own: placement is the only part that knows the capacity's
layout; the strong planner tries other placers on the same windows."""

import bisect
import heapq

import numpy as np


def align_up(x, alignment):
    return -(-x // alignment) * alignment


def windows(tensors, plan, kinds, n_points):
    """(lower point, upper point inclusive, tensor, residency index); a tensor that ends
    on the device holds its last residency past every point."""
    out = []
    for i, rows in enumerate(plan):
        uses = tensors[i][3]
        for k, (first, count, pre) in enumerate(rows):
            lo = 2 * uses[first] if pre is None else 2 * pre + 1
            kept = kinds[i].end == "device" and k == len(rows) - 1
            out.append((lo, n_points if kept else 2 * uses[first + count - 1], i, k))
    return out


def first_fit_place(tensors, plan, capacity, kinds, n_points):
    """Offsets per residency by first fit in order of first point, or None past the capacity."""
    res = windows(tensors, plan, kinds, n_points)
    order = sorted(
        range(len(res)),
        key=lambda r: (res[r][0], -(res[r][1] - res[r][0]), -tensors[res[r][2]][1], r),
    )
    offsets = [[0] * len(rows) for rows in plan]
    starts, ends = [], []
    expiry = []
    for r in order:
        lo, hi, i, k = res[r]
        size, align = tensors[i][1], tensors[i][2]
        while expiry and expiry[0][0] < lo:
            _, off = heapq.heappop(expiry)
            j = bisect.bisect_left(starts, off)
            del starts[j], ends[j]
        off = lowest_hole(starts, ends, size, align, capacity)
        if off is None:
            return None
        j = bisect.bisect_left(starts, off)
        starts.insert(j, off)
        ends.insert(j, off + size)
        heapq.heappush(expiry, (hi, off))
        offsets[i][k] = off
    return offsets


def lowest_hole(starts, ends, size, align, capacity):
    if not starts:
        return 0 if size <= capacity else None
    start = np.array(starts, dtype=np.int64)
    low = np.concatenate(([0], np.array(ends, dtype=np.int64)))
    cand = -(-low // align) * align
    fits = np.flatnonzero(cand[:-1] + size <= start)
    if fits.size:
        return int(cand[fits[0]])
    return int(cand[-1]) if int(cand[-1]) + size <= capacity else None


def per_step_place(tensors, plan, capacity=0, kinds=None):
    """Each step's residencies side by side; the last ones of tensors that end on the
    device stack down from the capacity."""
    by_step = {}
    for i, rows in enumerate(plan):
        for k, (first, _, _) in enumerate(rows):
            by_step.setdefault(tensors[i][3][first], []).append((i, k))
    offsets = [[0] * len(rows) for rows in plan]
    floor = capacity
    for s in sorted(by_step):
        members = by_step[s]
        members.sort(key=lambda ik: (-tensors[ik[0]][2], -tensors[ik[0]][1]))
        top = 0
        for i, k in members:
            if kinds is not None and kinds[i].end == "device" and k == len(plan[i]) - 1:
                floor = (floor - tensors[i][1]) // tensors[i][2] * tensors[i][2]
                offsets[i][k] = floor
                continue
            off = align_up(top, tensors[i][2])
            offsets[i][k] = off
            top = off + tensors[i][1]
    return offsets
