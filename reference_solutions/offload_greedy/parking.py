"""Choosing what to park (steps 1-3 of offload_greedy.py's overview): the idle gaps
between uses, the load with everything resident, the gaps parked longest idle first
until the load stays under the target, copy-ins moved as early as the memory allows;
then the residencies those choices make, and the two fallback plans (swap everything,
one residency per use).

Why a module of its own: it decides what the plan is; how each parked residency
leaves (ways_out.py) and where it sits (placement.py) come after, and the strong
planner calls `choose` with its own targets, fill levels and ranks."""

import numpy as np


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


def base_load(tensors, n_points, kinds):
    """Bytes held at each point with every tensor kept from its first use (from its
    copy-in right before it, if it starts off the device) to its last (or the end)."""
    diff = np.zeros(n_points + 1, dtype=np.int64)
    for i, (_, size, _, uses) in enumerate(tensors):
        fetched = kinds[i].start != "device" and uses[0] > 0
        diff[2 * uses[0] - fetched] += size
        if kinds[i].end != "device":
            diff[2 * uses[-1] + 1] -= size
    return np.cumsum(diff[:-1])


def entry_gaps(tensors, kinds):
    """Tensors that start off the device: parked from before step 0 to their first use."""
    return [
        (i, -1, -1, uses[0], size, 0.0)
        for i, (_, size, _, uses) in enumerate(tensors)
        if kinds[i].start != "device" and uses[0] > 0
    ]


def choose(tensors, gaps, load0, target, entries=(), fill=None, rank=None):
    """{(tensor, j): prefetch_after} for the gaps parked so that the load stays <= target
    (j = -1: the copy-in before the first use of a tensor that starts off the device);
    copy-ins move early while the load stays <= fill (default: target). Gaps are tried
    longest idle time first, or in increasing `rank(gap row)` (the strong planner's)."""
    fill = target if fill is None else fill
    load = load0.copy()
    parked = {len(gaps) + e: row[3] - 1 for e, row in enumerate(entries)}
    first = (
        (lambda g: (-gaps[g][5], -gaps[g][4], g))
        if rank is None
        else (lambda g: (rank(gaps[g]), g))
    )
    by_idle = sorted(range(len(gaps)), key=first)
    gaps = list(gaps) + list(entries)
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
        _, j, a, b, size, _ = gaps[g]
        lo, hi = max(0, 2 * a + 1), 2 * b - 1
        bad = np.flatnonzero(load[lo:hi] + size > fill)
        if not bad.size:  # it fits across the whole gap: keep it resident (or fetch at once)
            load[lo:hi] += size
            if j >= 0:
                del parked[g]
            else:
                parked[g] = -1
            continue
        first_free = lo + int(bad[-1]) + 1  # points from here to hi-1 can take it back
        p = max(a, first_free // 2)  # copy-in issued after p occupies from 2p+1
        if 2 * p + 1 < first_free:
            p += 1
        load[2 * p + 1 : hi] += size
        parked[g] = p
    return {(gaps[g][0], gaps[g][1]): p for g, p in parked.items()}


def residencies(tensors, parked, kinds):
    """Per tensor: (first use index, use count, prefetch_after or None)."""
    plan = []
    for i, (_, _, _, uses) in enumerate(tensors):
        rows, start, pre = [], 0, None
        if kinds[i].start != "device":
            pre = parked.get((i, -1), -1)
        for j in range(len(uses)):
            if j == len(uses) - 1 or (i, j) in parked:
                rows.append((start, j + 1 - start, pre))
                if j < len(uses) - 1:
                    start, pre = j + 1, parked[(i, j)]
        plan.append(rows)
    return plan


def swap_plan(tensors, kinds):
    plan = []
    for i, (_, _, _, uses) in enumerate(tensors):
        rows, start, made = [], 0, kinds[i].start == "device"
        for j in range(1, len(uses) + 1):
            if j == len(uses) or uses[j] != uses[j - 1] + 1:
                rows.append((start, j - start, None if start == 0 and made else uses[start] - 1))
                start = j
        plan.append(rows)
    return plan


def per_use_plan(tensors, kinds=None):
    return [
        [
            (j, 1, None if j == 0 and (kinds is None or kinds[i].start == "device") else u - 1)
            for j, u in enumerate(uses)
        ]
        for i, (_, _, _, uses) in enumerate(tensors)
    ]
