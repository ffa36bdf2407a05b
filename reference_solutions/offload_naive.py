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

v2 cases (README "v2" fields): a tensor that starts on the host or NVMe is
fetched just in time before its first use; a residency whose off-device copy
is still current (nothing written since it came in) is dropped instead of
copied out; dirty ones go back to the host, or to NVMe when the tensor lives
there or the host copies would pass the host capacity. A tensor that ends on
the device keeps its last residency to the end; one that ends on the host gets
the verifier's final copy-out. Recompute and compression are never used.
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


def tiers(case):
    """Per tensor (start, end, written use flags); v1 defaults: device, none, every use."""
    out = []
    for t in case["tensors"]:
        writes = set(t.get("writes", t["uses"]))
        written = [u in writes for u in t["uses"]]
        out.append((t.get("start", "device"), t.get("end", "none"), written))
    return out


def align_up(x, alignment):
    return -(-x // alignment) * alignment


def swap_plan(tensors, kinds=None):
    """Residencies per tensor: (first use index, use count, prefetch_after or None)."""
    plan = []
    for i, (_, _, _, uses) in enumerate(tensors):
        rows, start = [], 0
        made = kinds is None or kinds[i][0] == "device"  # else fetched before its first use
        for j in range(1, len(uses) + 1):
            if j == len(uses) or uses[j] != uses[j - 1] + 1:
                rows.append((start, j - start, None if start == 0 and made else uses[start] - 1))
                start = j
        plan.append(rows)
    return plan


def per_use_plan(tensors, kinds=None):
    return [
        [
            (j, 1, None if j == 0 and (kinds is None or kinds[i][0] == "device") else uses[j] - 1)
            for j in range(len(uses))
        ]
        for i, (_, _, _, uses) in enumerate(tensors)
    ]


def outs(kinds, plan, park):
    """Per residency: how it leaves (None for a tensor's last): "drop" while its
    off-device copy is current, else park[i] ("copy" or "nvme")."""
    out = []
    for i, rows in enumerate(plan):
        start, _, writes = kinds[i]
        current, mine = start != "device", []
        for k, (first, count, pre) in enumerate(rows):
            if pre is None or any(writes[first : first + count]):
                current = False
            mine.append(None if k == len(rows) - 1 else "drop" if current else park[i])
            current = True
        out.append(mine)
    return out


def host_peak(tensors, kinds, plan, out, n_steps):
    """Most bytes the host copies hold at one point (README "Host memory")."""
    end_point = 2 * n_steps - 1
    diff = [0] * (2 * n_steps + 2)  # index = point + 1

    def hold(lo, hi, nbytes):
        diff[lo + 1] += nbytes
        diff[max(lo, hi) + 2] -= nbytes

    for i, rows in enumerate(plan):
        size, uses = tensors[i][1], tensors[i][3]
        start, end, writes = kinds[i]
        made = -1 if start == "host" else None  # point the host copy was made, if on the host
        current, read_at = start != "device", None
        for k, (first, count, pre) in enumerate(rows):
            if pre is not None and made is not None:
                read_at = 2 * uses[first] - 1
            if pre is None or any(writes[first : first + count]):
                current = False
            last = 2 * uses[first + count - 1] + 1
            if k < len(rows) - 1 and out[i][k] in ("copy", "nvme"):
                if made is not None:
                    hold(made, read_at if read_at is not None else made, size)
                made, read_at, current = (last if out[i][k] == "copy" else None), None, True
            elif k == len(rows) - 1:
                if made is not None and end == "host" and current:
                    hold(made, end_point, size)
                    continue
                if made is not None:
                    hold(made, read_at if read_at is not None else made, size)
                if end == "host":
                    hold(last, end_point, size)
    peak = held = 0
    for d in diff:
        held += d
        peak = max(peak, held)
    return peak


def park_choice(case, tensors, kinds, plan):
    """Dirty residencies go to NVMe when the tensor lives there or the host would overflow."""
    nvme = "nvme" in case
    park = ["nvme" if nvme and k[0] == "nvme" else "copy" for k in kinds]
    out = outs(kinds, plan, park)
    cap = case.get("host_capacity")
    if cap is not None and host_peak(tensors, kinds, plan, out, len(case["steps"])) > cap:
        if nvme:
            out = outs(kinds, plan, ["nvme"] * len(kinds))
        if host_peak(tensors, kinds, plan, out, len(case["steps"])) > cap:
            print("the host copies pass the host capacity", file=sys.stderr)
    return out


def windows(tensors, plan, kinds=None, n_points=0):
    """Flat residency list: (lower point, upper point inclusive, tensor, residency index);
    a tensor that ends on the device holds its last residency past every point."""
    out = []
    for i, rows in enumerate(plan):
        uses = tensors[i][3]
        kept = kinds is not None and kinds[i][1] == "device"
        for k, (first, count, pre) in enumerate(rows):
            lo = 2 * uses[first] if pre is None else 2 * pre + 1
            hi = n_points if kept and k == len(rows) - 1 else 2 * uses[first + count - 1]
            out.append((lo, hi, i, k))
    return out


def first_fit_place(tensors, plan, capacity, kinds=None, n_points=0):
    """Offsets per residency, or None when first fit passes the capacity."""
    res = windows(tensors, plan, kinds, n_points)
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


def per_step_place(tensors, plan, capacity, kinds=None):
    """Every residency covers one use: pack each step's tensors side by side; the last
    residencies of tensors that end on the device stack down from the capacity."""
    by_step = {}
    for i, rows in enumerate(plan):
        for k, (first, _, _) in enumerate(rows):
            by_step.setdefault(tensors[i][3][first], []).append((i, k))
    offsets = [[0] * len(rows) for rows in plan]
    floor = capacity
    for s in sorted(by_step):
        members = by_step[s]
        # Largest alignment first: the packing stays aligned with little padding.
        members.sort(key=lambda ik: (-tensors[ik[0]][2], -tensors[ik[0]][1]))
        top = 0
        for i, k in members:
            if kinds is not None and kinds[i][1] == "device" and k == len(plan[i]) - 1:
                floor = (floor - tensors[i][1]) // tensors[i][2] * tensors[i][2]
                offsets[i][k] = floor
                continue
            off = align_up(top, tensors[i][2])
            offsets[i][k] = off
            top = off + tensors[i][1]
    return offsets


def write_plan(path, tensors, plan, offsets, leave=None):
    out = []
    for i, rows in enumerate(plan):
        res = []
        for k, (_, count, pre) in enumerate(rows):
            row = {"offset": offsets[i][k], "uses": count}
            if pre is not None:
                row["prefetch_after"] = pre
            if leave is not None and leave[i][k] not in (None, "copy"):
                row["out"] = leave[i][k]
            res.append(row)
        out.append({"id": tensors[i][0], "residencies": res})
    with open(path, "w") as f:
        json.dump({"tensors": out}, f, separators=(",", ":"))


def main():
    case, tensors = read_case(os.environ["MEMORACE_CASE_DIR"])
    capacity, kinds = int(case["capacity"]), tiers(case)
    n_points = 2 * len(case["steps"])
    plan = swap_plan(tensors, kinds)
    offsets = first_fit_place(tensors, plan, capacity, kinds, n_points)
    if offsets is None:
        print("first fit passed the capacity: one residency per use", file=sys.stderr)
        plan = per_use_plan(tensors, kinds)
        offsets = per_step_place(tensors, plan, capacity, kinds)
    leave = park_choice(case, tensors, kinds, plan)
    out_path = os.path.join(os.environ["MEMORACE_OUT_DIR"], "plan.json")
    write_plan(out_path, tensors, plan, offsets, leave)
    return 0


if __name__ == "__main__":
    sys.exit(main())
