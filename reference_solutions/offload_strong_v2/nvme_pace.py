"""Seeds for cases with an NVMe tier whose tensors start there (ZeRO-Infinity-like
optimizer state): the NVMe read engine is the bottleneck (7 GB/s against steps that
need a fraction of its time), and greedy fetches those tensors as late as the memory
lets it, so the engine idles for the first part of the step and every later read
ends late. Here they are paced instead: in order of first use, each copy-in is
issued after the last step that ends (by a timing estimate) before the read ahead
of it does, so the reads run back to back from time 0 and each waits briefly in the
host-to-device queue (its second leg blocks the copies behind it until its read
ends). Their bytes are held from that step on, and the other gaps are parked to a
memory target below that load (greedy's `choose` with the paced windows preloaded).
"""

import bisect

import numpy as np


def paced(case, tensors, kinds, entries, ends, room):
    """{tensor: prefetch_after} for the NVMe-start entries, reads back to back in order
    of first use; `ends`: the estimated end (µs) of each step; `room[point]`: bytes the
    paced copies may hold there (one that does not fit is issued later)."""
    nvme = case["nvme"]
    bandwidth, latency = int(nvme["read_bandwidth"]), int(nvme.get("read_latency", 0))
    rows = sorted((e for e in entries if kinds[e[0]].start == "nvme"), key=lambda e: (e[3], e[0]))
    clock, out = 0.0, {}
    for i, _, _, first, size, _ in rows:
        p = min(bisect.bisect_right(ends, clock) - 1, first - 1)
        short = np.flatnonzero(room[2 * p + 1 : 2 * first - 1] < size)
        if short.size:  # no room from p on: issued after the last point without room
            p = min(first - 1, p + (int(short[-1]) + 2) // 2)
        room[2 * p + 1 : 2 * first - 1] -= size
        out[i] = p
        clock = max(clock, ends[p] if p >= 0 else 0.0) + latency + size / bandwidth
    return out


def least_load(g, tensors, kinds, gaps, n_points):
    """Bytes held at each point with every gap parked (what no choice can free)."""
    load = g.base_load(tensors, n_points, kinds)
    diff = np.zeros(n_points + 1, dtype=np.int64)
    for _, _, a, b, size, _ in gaps:
        diff[2 * a + 1] -= size
        diff[2 * b - 1] += size
    return load + np.cumsum(diff[:-1])


def paced_choice(g, case, tensors, kinds, target, ends):
    """greedy's {(tensor, j): prefetch_after} at `target` with the NVMe entries paced,
    holding together at most what the least load leaves of the target."""
    steps, n_points = case["steps"], 2 * len(case["steps"])
    entries, gaps = g.entry_gaps(tensors, kinds), g.gap_table(tensors, steps)
    nvme = {e[0] for e in entries if kinds[e[0]].start == "nvme"}
    least = least_load(g, tensors, kinds, gaps, n_points)
    for i in nvme:  # counted by base_load from just before the first use: not theirs
        least[2 * tensors[i][3][0] - 1 : 2 * tensors[i][3][0]] -= tensors[i][1]
    room = target - least
    pace = paced(case, tensors, kinds, entries, ends, room)
    load = g.base_load(tensors, n_points, kinds)
    for i, p in pace.items():
        load[2 * p + 1 : 2 * tensors[i][3][0] - 1] += tensors[i][1]
    rest = [e for e in entries if e[0] not in pace]
    chosen = g.choose(tensors, gaps, load, target, rest)
    chosen.update({(i, -1): p for i, p in pace.items()})
    return chosen


def estimates(case, timing):
    """Step-end estimates to pace by: the best plan's own (its reads come earlier, so
    its steps do too, hence iterated) and compute alone slowed down twice."""
    done = np.cumsum(np.array(case["steps"], dtype=np.float64))
    return [[e / timing.unit for e in timing.step_end], list(done * 2)]


def starts_on_nvme(case, kinds):
    return "nvme" in case and any(k.start == "nvme" for k in kinds)
