"""Ways in and out on v2 cases (offload_greedy.py's overview): which residencies are
recomputed instead of copied in, how each parked one leaves (drop, copy, compressed,
NVMe), the most bytes the host copies hold at once, and the plan as the placement sees
it (a recomputed residency held from its step).

Why a module of its own: these rules only change how a chosen plan moves its bytes,
never what is parked; the strong planner varies them through `Knobs`."""

import sys
from collections import namedtuple

# How `ways` chooses (the strong planner varies them): compress when the link time saved is
# at least `codec` times the codec time (None: never); recompute even when dearer than the copy.
Knobs = namedtuple("Knobs", "codec recompute_all")
GREEDY = Knobs(2, False)


def recomputed_residencies(case, tensors, kinds, plan, knobs=GREEDY):
    """{(tensor, k)}: residencies rebuilt by recompute instead of copied in (the rule in
    offload_greedy.py's overview). A source must be held in full after the step before:
    its residency there covers an earlier use, or is a full copy-in (never compressed,
    never recomputed)."""
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
    """How a dirty residency leaves: NVMe, compressed or a full copy (the rules in
    offload_greedy.py's overview)."""
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
