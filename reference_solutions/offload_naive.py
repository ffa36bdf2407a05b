#!/usr/bin/env python3
"""Naive offload planner ("swap everything"); Python 3.11 and numpy.

A tensor stays on the device only across consecutive uses (steps s and s+1);
before every other use it is swapped out after its previous use and fetched
back just in time: its copy-in is issued after the step right before the use
(prefetch_after = use - 1). Nothing overlaps with compute, so most fetched
uses stall for a whole transfer.

Residencies are placed by first fit over their occupancy in step time (points
2s = "during step s", 2s+1 = "after step s"): in order of their first point,
each goes at the lowest aligned offset that no live residency occupies. At
every point the live residencies are those one step uses, so they fit; if
first fit fragments past the capacity, every use gets a residency of its own
and each step's tensors are packed side by side (always fits when the step's
tensors do).
"""

import bisect
import heapq
import json
import os
import sys

import numpy as np


def read_case(case_dir):
    with open(os.path.join(case_dir, "case.json")) as f:
        case = json.load(f)
    tensors = [
        (t["id"], int(t["size"]), max(1, int(t["alignment"])), list(t["uses"]))
        for t in case["tensors"]
    ]
    return case, tensors


def align_up(x, alignment):
    return -(-x // alignment) * alignment


def swap_plan(tensors):
    """Residencies per tensor: (first use index, use count, prefetch_after or None)."""
    plan = []
    for _, _, _, uses in tensors:
        rows, start = [], 0
        for j in range(1, len(uses) + 1):
            if j == len(uses) or uses[j] != uses[j - 1] + 1:
                rows.append((start, j - start, None if start == 0 else uses[start] - 1))
                start = j
        plan.append(rows)
    return plan


def per_use_plan(tensors):
    return [
        [(j, 1, None if j == 0 else uses[j] - 1) for j in range(len(uses))]
        for _, _, _, uses in tensors
    ]


def windows(tensors, plan):
    """Flat residency list: (lower point, upper point inclusive, tensor, residency index)."""
    out = []
    for i, rows in enumerate(plan):
        uses = tensors[i][3]
        for k, (first, count, pre) in enumerate(rows):
            lo = 2 * uses[first] if pre is None else 2 * pre + 1
            out.append((lo, 2 * uses[first + count - 1], i, k))
    return out


def first_fit_place(tensors, plan, capacity):
    """Offsets per residency, or None when first fit passes the capacity."""
    res = windows(tensors, plan)
    order = sorted(range(len(res)), key=lambda r: (res[r][0], -tensors[res[r][2]][1], r))
    offsets = [[0] * len(rows) for rows in plan]
    starts, ends = [], []  # live residencies sorted by offset
    expiry = []  # (upper point, offset)
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
    low = np.concatenate(([0], np.array(ends, dtype=np.int64)))  # disjoint and sorted
    cand = -(-low // align) * align
    fits = np.flatnonzero(cand[:-1] + size <= start)
    if fits.size:
        return int(cand[fits[0]])
    return int(cand[-1]) if int(cand[-1]) + size <= capacity else None


def per_step_place(tensors, plan, capacity):
    """Every residency covers one use: pack each step's tensors side by side."""
    by_step = {}
    for i, rows in enumerate(plan):
        for k, (first, _, _) in enumerate(rows):
            by_step.setdefault(tensors[i][3][first], []).append((i, k))
    offsets = [[0] * len(rows) for rows in plan]
    for members in by_step.values():
        # Largest alignment first: the packing stays aligned with little padding.
        members.sort(key=lambda ik: (-tensors[ik[0]][2], -tensors[ik[0]][1]))
        top = 0
        for i, k in members:
            off = align_up(top, tensors[i][2])
            offsets[i][k] = off
            top = off + tensors[i][1]
    return offsets


def write_plan(path, tensors, plan, offsets):
    out = []
    for i, rows in enumerate(plan):
        res = []
        for k, (_, count, pre) in enumerate(rows):
            row = {"offset": offsets[i][k], "uses": count}
            if pre is not None:
                row["prefetch_after"] = pre
            res.append(row)
        out.append({"id": tensors[i][0], "residencies": res})
    with open(path, "w") as f:
        json.dump({"tensors": out}, f, separators=(",", ":"))


def main():
    case, tensors = read_case(os.environ["MEMORACE_CASE_DIR"])
    capacity = int(case["capacity"])
    plan = swap_plan(tensors)
    offsets = first_fit_place(tensors, plan, capacity)
    if offsets is None:
        print("first fit passed the capacity: one residency per use", file=sys.stderr)
        plan = per_use_plan(tensors)
        offsets = per_step_place(tensors, plan, capacity)
    write_plan(os.path.join(os.environ["MEMORACE_OUT_DIR"], "plan.json"), tensors, plan, offsets)
    return 0


if __name__ == "__main__":
    sys.exit(main())
