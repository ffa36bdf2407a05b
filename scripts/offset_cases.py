"""MiniMalloc-like hard `offset` cases with a known fitting plan, capacity = lower bound.

The shipped MiniMalloc "challenging" cases (A-F) have 150-300 buffers, sizes in
1 KiB units from 0.1 % to 60 % of the capacity (median about 5 %), lifespans
from 0.1 % to the whole horizon (median about 10 %, 10-25 % of the buffers
live more than half of it), and a load near the capacity much of the time
(area density 0.66-0.98, median 0.92). This module makes cases of that family by
replaying a packing: a sweep over time steps keeps memory [0, C) split into
occupied and free address ranges; at each step the buffers that end free
their ranges, adjacent free ranges merge, and most free ranges are cut into
new buffers (sizes log-uniform, lifespans mostly short, some long; with a
per-case chance a range is stacked longest-lived first, as allocators that
keep long-lived tensors low do) or left free for a while (holes: the load
is below C most of the time; the density spans 0.66-1.0, median 0.88). New
buffers straddle the boundaries of the ones that ended, so the packing is not
a guillotine cut. At one chosen step every free range is filled, so the load
there is exactly C: the lower bound (max load) equals the capacity, and the
offsets of the replay are a fitting plan by construction.

    python -m scripts.offset_cases OUT_DIR [--count 300] [--seed 0]

writes `hard-NNN.1048576.csv` files (MiniMalloc CSV, the capacity in the name:
`memorace problem import-minimalloc OUT_DIR` reads them).
"""

from __future__ import annotations

import argparse
import math
import random
from dataclasses import dataclass
from pathlib import Path

CAPACITY = 1 << 20
GRAIN = 1024  # sizes and times are multiples of it, as in A-F
MIN_BUFFERS, MAX_BUFFERS = 150, 320


@dataclass(frozen=True)
class HardCase:
    """Buffers as (lower, upper, size) rows, ids are row numbers; `offsets` fit `capacity`."""

    name: str
    capacity: int
    rows: list[tuple[int, int, int]]
    offsets: list[int]

    def csv(self) -> str:
        lines = ["id,lower,upper,size"]
        lines += [f"{i},{lo},{up},{size}" for i, (lo, up, size) in enumerate(self.rows)]
        return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Shape:
    """Knobs of one case, drawn per seed so the set spans the family."""

    steps: int  # time steps of the sweep
    long_share: float  # share of new buffers that live long
    holes: float  # share of freed memory left free for a while
    stacked: float  # chance that a refill puts its longest-lived buffers lowest
    max_size: float  # largest new buffer, as a share of the capacity


def generate(seed: int, capacity: int = CAPACITY) -> HardCase:
    """One case of 150-320 buffers; the same seed gives the same case."""
    rng = random.Random(seed)
    while True:  # redraw the knobs until the size is that of A-F
        case = _replay(rng, f"hard-{seed:03d}", capacity)
        if MIN_BUFFERS <= len(case.rows) <= MAX_BUFFERS:
            return case


def _replay(rng: random.Random, name: str, capacity: int) -> HardCase:
    shape = Shape(
        steps=rng.randint(40, 100),
        long_share=rng.uniform(0.05, 0.2),
        holes=rng.uniform(0.04, 0.35),
        max_size=rng.uniform(0.2, 0.6),
        stacked=rng.uniform(0, 1),
    )
    units = capacity // GRAIN
    full_step = rng.randrange(shape.steps // 4, 3 * shape.steps // 4)
    rows: list[tuple[int, int, int]] = []
    offsets: list[int] = []
    live: list[tuple[int, int, int]] = []  # (end step, first unit, units)
    for step in range(shape.steps):
        live = [b for b in live if b[0] > step]
        for lo, hi in _free_ranges(live, units):
            pieces = []  # (end step, units, hole)
            for width in _cut(rng, hi - lo, max(1, int(units * shape.max_size))):
                end = min(shape.steps, step + _lifespan(rng, shape))
                hole = step != full_step and rng.random() < shape.holes
                if hole and step < full_step:
                    end = min(end, full_step)  # free again by the full step
                pieces.append((end, width, hole))
            if rng.random() < shape.stacked:
                pieces.sort(key=lambda p: -p[0])  # longest-lived at the bottom
            first = lo
            for end, width, hole in pieces:
                live.append((end, first, width))
                if not hole:
                    rows.append((step, end, width))
                    offsets.append(first)
                first += width
    scale = capacity // shape.steps // GRAIN * GRAIN  # times in GRAIN multiples
    order = list(range(len(rows)))
    rng.shuffle(order)  # the file order tells nothing about the packing
    return HardCase(
        name=name,
        capacity=capacity,
        rows=[(rows[i][0] * scale, rows[i][1] * scale, rows[i][2] * GRAIN) for i in order],
        offsets=[offsets[i] * GRAIN for i in order],
    )


def _free_ranges(live: list[tuple[int, int, int]], units: int) -> list[tuple[int, int]]:
    """Maximal free unit ranges [lo, hi) of memory, given the live buffers."""
    ranges, at = [], 0
    for _, first, width in sorted(live, key=lambda b: b[1]):
        if first > at:
            ranges.append((at, first))
        at = first + width
    if at < units:
        ranges.append((at, units))
    return ranges


def _cut(rng: random.Random, room: int, largest: int) -> list[int]:
    """Cuts `room` units into widths: a few tiny, the rest log-uniform up to `largest`."""
    widths = []
    while room > 0:
        smallest = 1 if rng.random() < 0.15 else max(1, largest // 10)
        width = math.exp(rng.uniform(math.log(smallest), math.log(largest)))
        widths.append(min(room, max(1, round(width))))
        room -= widths[-1]
    return widths


def _lifespan(rng: random.Random, shape: Shape) -> int:
    if rng.random() < shape.long_share:
        return rng.randint(shape.steps // 2, shape.steps)
    return max(1, round(math.exp(rng.uniform(0, math.log(shape.steps / 3)))))


def write_cases(out: Path, count: int, seed: int = 0) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(count):
        case = generate(seed + k)
        path = out / f"{case.name}.{case.capacity}.csv"
        path.write_text(case.csv())
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    paths = write_cases(args.out, args.count, args.seed)
    print(f"wrote {len(paths)} cases to {args.out}")


if __name__ == "__main__":
    main()
