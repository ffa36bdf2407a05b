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
   passes the capacity, lower the target and start over (4 % at a time, 12 tries;
   24 on v2 cases, where a decode step alone may need half the device); then fall
   back to the naive swap-everything plan, then to one residency per use packed
   step by step (always fits when each step's tensors do).

v2 cases (README "v2" fields): a tensor that starts on the host or NVMe is a
gap that must be parked (from before step 0 to its first use), its copy-in
moved early like the others; a tensor that ends on the device counts to the
end. Each parked gap then leaves by the first that applies (ways below):
- recompute, when the tensor is recomputable, every source is held in full
  at its next use, and the cost is at most the copy-in's link time;
- drop, when its off-device copy is current (nothing written since);
- compressed, when the link time saved out and in is at least twice the
  codec time it adds to the compute stream;
- NVMe, when the tensor lives there, or when the host copies would pass the
  host capacity (all dirty parks go to NVMe then);
- a clean tensor whose copy is on NVMe is copied to the host the first time
  it leaves (staged: later fetches skip the NVMe read), unless the host is short;
- a full copy to the host otherwise.
"""

import bisect
import heapq
import json
import os
import sys
from collections import namedtuple

import numpy as np

# v2 per tensor: start/end tiers, written flag per use, (cost, source indices) or None,
# (compressed size, encode, decode) or None; a v1 tensor is device/none/all written.
Kind = namedtuple("Kind", "start end writes recompute compress")
# How `ways` chooses (the strong planner varies them): compress when the link time saved is
# at least `codec` times the codec time (None: never); recompute even when dearer than the copy.
Knobs = namedtuple("Knobs", "codec recompute_all")
GREEDY = Knobs(2, False)
V2_KEYS, V1_TENSOR = (
    {"h2d_latency", "d2h_latency", "host_capacity", "nvme"},
    {"id", "size", "alignment", "uses"},
)


def read_case(case_dir):
    with open(os.path.join(case_dir, "case.json")) as f:
        case = json.load(f)
    tensors = [
        (t["id"], int(t["size"]), max(1, int(t["alignment"])), list(t["uses"]))
        for t in case["tensors"]
    ]
    return case, tensors


def kinds_of(case):
    index = {t["id"]: i for i, t in enumerate(case["tensors"])}
    out = []
    for t in case["tensors"]:
        writes, rc, cz = set(t.get("writes", t["uses"])), t.get("recompute"), t.get("compress")
        out.append(
            Kind(
                t.get("start", "device"),
                t.get("end", "none"),
                [u in writes for u in t["uses"]],
                None if rc is None else (int(rc["cost"]), [index[x] for x in rc["from"]]),
                None if cz is None else (int(cz["size"]), int(cz["encode"]), int(cz["decode"])),
            )
        )
    return out


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


# ---- ways in and out (v2) ----------------------------------------------------------------


def recomputed_residencies(case, tensors, kinds, plan, knobs=GREEDY):
    """{(tensor, k)}: residencies rebuilt by recompute instead of copied in (rule above).
    A source must be held in full after the step before: its residency there covers an
    earlier use, or is a full copy-in (never compressed, never recomputed)."""
    h2d, lat = int(case["h2d_bandwidth"]), int(case.get("h2d_latency", 0))
    cover = [{u: k for k, (f, c, _) in enumerate(rows) for u in tensors[i][3][f : f + c]}
             for i, rows in enumerate(plan)]  # fmt: skip
    chosen, pinned = set(), set()

    def held(s, b):
        k = cover[s].get(b)
        if k is None:
            return False
        first, _, pre = plan[s][k]
        if tensors[s][3][first] < b:
            return True
        return pre is not None and (s, k) not in chosen and kinds[s].compress is None

    for i, rows in enumerate(plan):
        if kinds[i].recompute is None:
            continue
        cost, sources = kinds[i].recompute
        for k in range(1, len(rows)):
            b = tensors[i][3][rows[k][0]]
            cheap = cost * h2d <= lat * h2d + tensors[i][1]  # no more than the copy-in
            if (
                (cheap or knobs.recompute_all)
                and (i, b) not in pinned
                and all(held(s, b) for s in sources)
            ):
                chosen.add((i, k))
                pinned |= {(s, b) for s in sources}
    return chosen


def park_way(case, kind, size, to_nvme, knobs=GREEDY):
    """How a dirty residency leaves: NVMe, compressed or a full copy (rules above)."""
    if "nvme" in case and (to_nvme or kind.start == "nvme"):
        return "nvme"
    if kind.compress is not None and knobs.codec is not None:
        small, enc, dec = kind.compress
        h2d, d2h = int(case["h2d_bandwidth"]), int(case["d2h_bandwidth"])
        if (size - small) * (h2d + d2h) >= knobs.codec * (enc + dec) * h2d * d2h:
            return "compressed"
    return "copy"


def ways_out(case, tensors, kinds, plan, recomputed, to_nvme=False, knobs=GREEDY):
    """Per residency: how it leaves ("drop", "copy", "compressed", "nvme"; None: last)."""
    leave = []
    for i, rows in enumerate(plan):
        current, mine = kinds[i].start != "device", []
        on_nvme = kinds[i].start == "nvme"  # the current copy is there
        for k, (first, count, pre) in enumerate(rows):
            if pre is None or any(kinds[i].writes[first : first + count]):
                current = False
            if k == len(rows) - 1:
                mine.append(None)
            elif (i, k + 1) in recomputed:
                mine.append("drop")
            elif current and on_nvme and not to_nvme:  # stage it: later fetches skip NVMe
                mine.append("copy")
                on_nvme = False
            elif current:
                mine.append("drop")
            else:
                mine.append(park_way(case, kinds[i], tensors[i][1], to_nvme, knobs))
                current, on_nvme = True, mine[-1] == "nvme"
        leave.append(mine)
    return leave


def host_peak(tensors, kinds, plan, leave, recomputed, n_steps):
    """Most bytes the host copies hold at one point (README "Host memory")."""
    end_point = 2 * n_steps - 1
    diff = [0] * (2 * n_steps + 2)  # index = point + 1

    def hold(lo, hi, nbytes):
        diff[lo + 1] += nbytes
        diff[max(lo, hi) + 2] -= nbytes

    for i, rows in enumerate(plan):
        kind, size, uses = kinds[i], tensors[i][1], tensors[i][3]
        made = -1 if kind.start == "host" else None  # point the host copy was made
        nbytes, read_at, full, current = size, None, True, kind.start != "device"
        for k, (first, count, pre) in enumerate(rows):
            if pre is not None and (i, k) not in recomputed and made is not None:
                read_at = 2 * uses[first] - 1
            if pre is None or any(kind.writes[first : first + count]):
                current = False
            way, last = leave[i][k], 2 * uses[first + count - 1] + 1
            if way in ("copy", "compressed", "nvme"):
                if made is not None:
                    hold(made, made if read_at is None else read_at, nbytes)
                made = None if way == "nvme" else last
                nbytes = kind.compress[0] if way == "compressed" else size
                read_at, full, current = None, way != "compressed", True
            elif way is None:
                keep = made is not None and kind.end == "host" and current and full
                if made is not None:
                    hold(made, end_point if keep else made if read_at is None else read_at, nbytes)
                if kind.end == "host" and not keep:
                    hold(last, end_point, size)
    peak = held = 0
    for d in diff:
        held += d
        peak = max(peak, held)
    return peak


def ways(case, tensors, kinds, plan, knobs=GREEDY):
    """(how each residency leaves, the recomputed ones); dirty parks go to NVMe when
    the host copies would pass the host capacity."""
    recomputed = recomputed_residencies(case, tensors, kinds, plan, knobs)
    leave = ways_out(case, tensors, kinds, plan, recomputed, knobs=knobs)
    cap, n_steps = case.get("host_capacity"), len(case["steps"])
    if cap is not None and host_peak(tensors, kinds, plan, leave, recomputed, n_steps) > cap:
        if "nvme" in case:
            leave = ways_out(case, tensors, kinds, plan, recomputed, True, knobs)
        if host_peak(tensors, kinds, plan, leave, recomputed, n_steps) > cap:
            print("the host copies pass the host capacity", file=sys.stderr)
    return leave, recomputed


def as_placed(plan, recomputed):
    """The plan with recomputed residencies held from their step (as if produced there)."""
    return [[(f, c, None if (i, k) in recomputed else pre) for k, (f, c, pre) in enumerate(rows)]
            for i, rows in enumerate(plan)]  # fmt: skip


# ---- placement --------------------------------------------------------------------------


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


def write_plan(path, tensors, plan, offsets, leave=None, recomputed=()):
    with open(path, "w") as f:
        json.dump(plan_json(tensors, plan, offsets, leave, recomputed), f, separators=(",", ":"))


def plan_json(tensors, plan, offsets, leave=None, recomputed=(), priority=None):
    """The plan as plan.json holds it; `priority`: {(tensor, residency): priority}."""
    out = []
    for i, rows in enumerate(plan):
        res = []
        for k, (first, count, pre) in enumerate(rows):
            row = {"offset": offsets[i][k], "uses": count}
            if (i, k) in recomputed:
                row.update({"in": "recompute", "recompute_before": tensors[i][3][first]})
            elif pre is not None:
                row["prefetch_after"] = pre
            if leave is not None and leave[i][k] not in (None, "copy"):
                row["out"] = leave[i][k]
            if priority and priority.get((i, k)):
                row["priority"] = priority[(i, k)]
            res.append(row)
        out.append({"id": tensors[i][0], "residencies": res})
    return {"tensors": out}


def greedy_plan(case, tensors, kinds):
    """(residencies, ways out, recomputed, offsets, the target that fitted or None): the
    plan of steps 1-4 above."""
    capacity, steps, n_points = int(case["capacity"]), case["steps"], 2 * len(case["steps"])
    load0 = base_load(tensors, n_points, kinds)
    gaps, entries = gap_table(tensors, steps), entry_gaps(tensors, kinds)
    v1 = not V2_KEYS & set(case) and all(set(t) <= V1_TENSOR for t in case["tensors"])
    target = capacity
    for attempt in range(12 if v1 else 24):  # v1 cases keep their v1 plans
        plan = residencies(tensors, choose(tensors, gaps, load0, target, entries), kinds)
        leave, recomputed = ways(case, tensors, kinds, plan)
        offsets = first_fit_place(tensors, as_placed(plan, recomputed), capacity, kinds, n_points)
        if offsets is not None:
            print(f"target {target} (attempt {attempt + 1})", file=sys.stderr)
            return plan, leave, recomputed, offsets, target
        target -= capacity // 25
    print("fragmentation: falling back to swapping everything", file=sys.stderr)
    plan = swap_plan(tensors, kinds)
    leave, recomputed = ways(case, tensors, kinds, plan)
    offsets = first_fit_place(tensors, as_placed(plan, recomputed), capacity, kinds, n_points)
    if offsets is None:
        plan = per_use_plan(tensors, kinds)
        leave, recomputed = ways(case, tensors, kinds, plan)
        offsets = per_step_place(tensors, as_placed(plan, recomputed), capacity, kinds)
    return plan, leave, recomputed, offsets, None


def main():
    case, tensors = read_case(os.environ["MEMORACE_CASE_DIR"])
    plan, leave, recomputed, offsets, _ = greedy_plan(case, tensors, kinds_of(case))
    out_path = os.path.join(os.environ["MEMORACE_OUT_DIR"], "plan.json")
    write_plan(out_path, tensors, plan, offsets, leave, recomputed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
