#!/usr/bin/env python3
"""Greedy offload planner; Python 3.11 and numpy (an archive: see pack.py).

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

This module is the planner's entry (memorace.toml runs it) and its face: the strong
planner (offload_strong_v2/strong.py) and the tests import it as `offload_greedy` and
find every part's functions here. Why parts: as one file of almost 500 lines it read
badly as an example; each part reads on its own. The parts, each named after what it does:
- tensor_kinds.py: case.json, the tensors and their v2 kinds;
- parking.py: what to park and when to fetch it (steps 1-3), the fallback plans;
- ways_out.py: recompute, drop, compress, NVMe or copy (v2), the host peak;
- placement.py: first fit over the residencies' windows (step 4), per-step packing;
- plan_file.py: plan.json.
"""

import os
import sys

from parking import (
    base_load,
    choose,
    entry_gaps,
    gap_table,
    per_use_plan,
    residencies,
    swap_plan,
)
from placement import align_up, first_fit_place, lowest_hole, per_step_place, windows
from plan_file import plan_json, write_plan
from tensor_kinds import Kind, kinds_of, read_case
from ways_out import (
    GREEDY,
    Knobs,
    as_placed,
    host_peak,
    park_way,
    recomputed_residencies,
    ways,
    ways_out,
)

__all__ = [
    "GREEDY", "V1_TENSOR", "V2_KEYS", "Kind", "Knobs", "align_up", "as_placed", "base_load",
    "choose", "entry_gaps", "first_fit_place", "gap_table", "greedy_plan", "host_peak",
    "kinds_of", "lowest_hole", "main", "park_way", "per_step_place", "per_use_plan",
    "plan_json", "read_case", "recomputed_residencies", "residencies", "swap_plan", "ways",
    "ways_out", "windows", "write_plan",
]  # fmt: skip
V2_KEYS, V1_TENSOR = (
    {"h2d_latency", "d2h_latency", "host_capacity", "nvme"},
    {"id", "size", "alignment", "uses"},
)


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
