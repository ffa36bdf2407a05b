#!/usr/bin/env python3
"""Naive offset planner ("stack top"); Python 3.11 and numpy.

Buffers are processed in order of (lower, row index in buffers.csv). Each
buffer goes at align_up(top, alignment), where top is the largest
offset + size among the live buffers already placed (upper > this buffer's
lower; 0 if there are none). Holes below the top are never reused, unless the
top would push the buffer past the capacity: only then does it take the
lowest hole among the live buffers that fits (first fit). If some buffer
still does not fit, it starts over placing every buffer by first fit (the
classic online allocator) and keeps the lower of the two peaks.

Live buffers are kept sorted by offset (disjoint, so the last one is the top);
an expiry heap on upper removes the dead ones. O(n log n) plus a scan of the
live buffers for each first-fit fallback.
"""

import bisect
import csv
import heapq
import json
import os
import sys

import numpy as np


def read_buffers(path):
    """Return a list of (id, lower, upper, size, alignment) in file order.

    Ids are kept verbatim; int() already ignores spaces around numbers."""
    with open(path, newline="") as f:
        rows = csv.reader(f)
        header = [name.strip() for name in next(rows)]
        col = {name: i for i, name in enumerate(header)}
        has_align = "alignment" in col
        buffers = []
        for row in rows:
            if not row or not "".join(row).strip():
                continue  # tolerate blank lines
            align = 1
            if has_align and row[col["alignment"]].strip():
                align = max(1, int(row[col["alignment"]]))
            buffers.append(
                (
                    row[col["id"]],
                    int(row[col["lower"]]),
                    int(row[col["upper"]]),
                    int(row[col["size"]]),
                    align,
                )
            )
    return buffers


def align_up(x, alignment):
    return -(-x // alignment) * alignment


def plan(buffers, capacity, always_first_fit=False):
    """Return one offset per buffer, in file order."""
    order = sorted(range(len(buffers)), key=lambda i: (buffers[i][1], i))
    offsets = [0] * len(buffers)
    starts, ends = [], []  # live buffers sorted by offset: their [start, end)
    expiry = []  # heap of (upper, offset) of live buffers
    for i in order:
        _, lower, upper, size, align = buffers[i]
        while expiry and expiry[0][0] <= lower:
            _, off = heapq.heappop(expiry)
            k = bisect.bisect_left(starts, off)
            del starts[k], ends[k]
        off = align_up(ends[-1] if ends else 0, align)
        if always_first_fit or off + size > capacity:
            off = first_fit(starts, ends, size, align, capacity, off)
        k = bisect.bisect_left(starts, off)
        starts.insert(k, off)
        ends.insert(k, off + size)
        heapq.heappush(expiry, (upper, off))
        offsets[i] = off
    return offsets


def first_fit(starts, ends, size, align, capacity, fallback):
    """Lowest aligned offset in a hole between live buffers, else `fallback`.

    Vectorized: the hole below live buffer k starts at the highest end of the
    buffers below it (they are disjoint and sorted, so a running maximum)."""
    if not starts:
        return 0 if size <= capacity else fallback
    start = np.array(starts, dtype=np.int64)
    low = np.maximum.accumulate(np.array(ends, dtype=np.int64))
    low = np.concatenate(([0], low))  # low[k]: bottom of the hole under buffer k
    cand = -(-low // align) * align
    fits = np.flatnonzero(cand[:-1] + size <= start)
    if fits.size:
        return int(cand[fits[0]])
    return int(cand[-1]) if cand[-1] + size <= capacity else fallback


def peak(buffers, offsets):
    return max((o + b[3] for b, o in zip(buffers, offsets, strict=True)), default=0)


def write_plan(path, buffers, offsets):
    with open(path, "w", newline="") as f:
        f.write("id,offset\n")
        f.writelines(f"{b[0]},{o}\n" for b, o in zip(buffers, offsets, strict=True))


def main():
    case_dir = os.environ["MEMORACE_CASE_DIR"]
    out_dir = os.environ["MEMORACE_OUT_DIR"]
    with open(os.path.join(case_dir, "case.json")) as f:
        capacity = json.load(f).get("capacity", 2**62)
    buffers = read_buffers(os.path.join(case_dir, "buffers.csv"))
    offsets = plan(buffers, capacity)
    if peak(buffers, offsets) > capacity:
        retry = plan(buffers, capacity, always_first_fit=True)
        offsets = min(offsets, retry, key=lambda o: peak(buffers, o))
    write_plan(os.path.join(out_dir, "plan.csv"), buffers, offsets)
    return 0


if __name__ == "__main__":
    sys.exit(main())
