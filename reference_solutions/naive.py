#!/usr/bin/env python3
"""Naive offset planner ("stack top"); Python 3.11, standard library only.

Buffers are processed in order of (lower, row index in buffers.csv). Each
buffer goes at align_up(top, alignment), where top is the largest
offset + size among the buffers already placed whose upper > this buffer's
lower (0 if there are none). Holes are never reused.

Other code reproduces this definition exactly, so do not change it.

Running time is O(n log n): because buffers come in order of lower, a placed
buffer with upper <= the current lower is dead for every later buffer too,
so a max-heap on offset + size with lazy deletion gives the top.
"""
import csv
import heapq
import os
import sys


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
            buffers.append((row[col["id"]], int(row[col["lower"]]),
                            int(row[col["upper"]]), int(row[col["size"]]), align))
    return buffers


def align_up(x, alignment):
    return -(-x // alignment) * alignment


def plan(buffers):
    """Return one offset per buffer, in file order."""
    order = sorted(range(len(buffers)), key=lambda i: (buffers[i][1], i))
    offsets = [0] * len(buffers)
    placed = []  # heap of (-(offset + size), upper); dead entries popped lazily
    for i in order:
        _, lower, upper, size, align = buffers[i]
        while placed and placed[0][1] <= lower:
            heapq.heappop(placed)
        top = -placed[0][0] if placed else 0
        offsets[i] = align_up(top, align)
        heapq.heappush(placed, (-(offsets[i] + size), upper))
    return offsets


def write_plan(path, buffers, offsets):
    with open(path, "w", newline="") as f:
        f.write("id,offset\n")
        f.writelines(f"{b[0]},{o}\n" for b, o in zip(buffers, offsets))


def main():
    case_dir = os.environ["MEMORACE_CASE_DIR"]
    out_dir = os.environ["MEMORACE_OUT_DIR"]
    buffers = read_buffers(os.path.join(case_dir, "buffers.csv"))
    write_plan(os.path.join(out_dir, "plan.csv"), buffers, plan(buffers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
