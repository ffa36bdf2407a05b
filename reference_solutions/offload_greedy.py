#!/usr/bin/env python3
"""Greedy offload planner; Python 3.11 and numpy.

1. Keep every tensor resident from its first to its last use and measure the
   load (bytes occupied) at every point of step time (2s = "during step s",
   2s+1 = "after step s").
2. Walk the idle gaps between consecutive uses of a tensor, longest compute
   time first: while some point the gap spans is over the target, park the
   tensor in host memory for that gap (copy-out after the use, copy-in just
   before the next one), which frees its bytes inside the gap.
3. Move each copy-in (earliest next use first) as early as the freed memory
   allows, so that the transfer overlaps with compute; a gap whose copy-in can
   go right after the previous use is not parked after all.
4. Place the residencies by first fit in step-time order. If fragmentation
   passes the capacity, lower the target and start over; after a few tries
   fall back to the naive swap-everything plan, then to one residency per use
   packed step by step (always fits when each step's tensors do).
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


# ---- choosing what to park --------------------------------------------------------------


def gap_table(tensors, steps):
    """Gaps (tensor, use index j, a = uses[j], b = uses[j+1]) that can free memory."""
    done = np.concatenate(
        ([0], np.cumsum(np.array(steps, dtype=np.float64)))
    )  # done[s] = start of s
    rows = []
    for i, (_, size, _, uses) in enumerate(tensors):
        for j in range(len(uses) - 1):
            a, b = uses[j], uses[j + 1]
            if b > a + 1:
                rows.append((i, j, a, b, size, done[b] - done[a + 1]))
    return rows


def base_load(tensors, n_points):
    diff = np.zeros(n_points + 1, dtype=np.int64)
    for _, size, _, uses in tensors:
        diff[2 * uses[0]] += size
        diff[2 * uses[-1] + 1] -= size
    return np.cumsum(diff[:-1])


def choose(tensors, gaps, load0, target):
    """{(tensor, j): prefetch_after} for the gaps parked so that the load stays <= target."""
    load = load0.copy()
    parked = {}
    by_idle = sorted(range(len(gaps)), key=lambda g: (-gaps[g][5], -gaps[g][4], g))
    over = bool(load.size) and load.max() > target
    for g in by_idle:
        if not over:
            break
        _, _, a, b, size, _ = gaps[g]
        lo, hi = 2 * a + 1, 2 * b - 1  # freed points with the copy-in issued after b-1
        if load[lo:hi].max() > target:
            load[lo:hi] -= size
            parked[g] = b - 1
            over = bool(load.size) and load.max() > target
    # Copy-ins as early as the memory allows, earliest deadline first.
    for g in sorted(parked, key=lambda g: (gaps[g][3], g)):
        _, _, a, b, size, _ = gaps[g]
        lo, hi = 2 * a + 1, 2 * b - 1
        bad = np.flatnonzero(load[lo:hi] + size > target)
        if not bad.size:  # it fits across the whole gap: keep it resident
            load[lo:hi] += size
            del parked[g]
            continue
        first_free = lo + int(bad[-1]) + 1  # points from here to hi-1 can take it back
        p = max(a, first_free // 2)  # copy-in issued after p occupies from 2p+1
        if 2 * p + 1 < first_free:
            p += 1
        load[2 * p + 1 : hi] += size
        parked[g] = p
    return {(gaps[g][0], gaps[g][1]): p for g, p in parked.items()}


def residencies(tensors, parked):
    """Per tensor: (first use index, use count, prefetch_after or None)."""
    plan = []
    for i, (_, _, _, uses) in enumerate(tensors):
        rows, start, pre = [], 0, None
        for j in range(len(uses)):
            if j == len(uses) - 1 or (i, j) in parked:
                rows.append((start, j + 1 - start, pre))
                if j < len(uses) - 1:
                    start, pre = j + 1, parked[(i, j)]
        plan.append(rows)
    return plan


def swap_plan(tensors):
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


# ---- placement --------------------------------------------------------------------------


def windows(tensors, plan):
    out = []
    for i, rows in enumerate(plan):
        uses = tensors[i][3]
        for k, (first, count, pre) in enumerate(rows):
            lo = 2 * uses[first] if pre is None else 2 * pre + 1
            out.append((lo, 2 * uses[first + count - 1], i, k))
    return out


def first_fit_place(tensors, plan, capacity):
    """Offsets per residency by first fit in order of first point, or None past the capacity."""
    res = windows(tensors, plan)
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


def per_step_place(tensors, plan):
    by_step = {}
    for i, rows in enumerate(plan):
        for k, (first, _, _) in enumerate(rows):
            by_step.setdefault(tensors[i][3][first], []).append((i, k))
    offsets = [[0] * len(rows) for rows in plan]
    for members in by_step.values():
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
    steps = case["steps"]
    load0 = base_load(tensors, 2 * len(steps))
    gaps = gap_table(tensors, steps)
    plan = offsets = None
    target = capacity
    for attempt in range(12):
        plan = residencies(tensors, choose(tensors, gaps, load0, target))
        offsets = first_fit_place(tensors, plan, capacity)
        if offsets is not None:
            print(f"target {target} (attempt {attempt + 1})", file=sys.stderr)
            break
        target -= capacity // 25
    if offsets is None:
        print("fragmentation: falling back to swapping everything", file=sys.stderr)
        plan = swap_plan(tensors)
        offsets = first_fit_place(tensors, plan, capacity)
    if offsets is None:
        plan = per_use_plan(tensors)
        offsets = per_step_place(tensors, plan)
    write_plan(os.path.join(os.environ["MEMORACE_OUT_DIR"], "plan.json"), tensors, plan, offsets)
    return 0


if __name__ == "__main__":
    sys.exit(main())
