"""MiniMalloc-like hard `offset` cases with a known fitting plan, capacity = lower bound.

The family.  MiniMalloc's "challenging" cases A-F (capacity 1 MiB) measure
(`family_stats`, horizon = last end - first start, "long-lived" = living more
than half the horizon):

    measure                               A-F range       FAMILY bound
    buffers                               154-296         150-320
    largest long-lived buffer / capacity  0-2.3 %         <= 2.5 %
    total of long-lived buffers / cap.    0-31 %          <= 31 %
    buffers live when the load peaks      14-71           >= 14
    distinct start/end times / buffers    0.47-0.59       0.45-0.65
    largest buffer / capacity             10-68 %         (drawn 10-65 %)
    median buffer / capacity              1.8-7.8 %       (follows the cut)
    area density (area / horizon x peak)  0.66-0.98       (follows the holes)

So the big buffers are short-lived and the long-lived ones are small: a few
slivers that stay all along, and large blocks that come and go between them.
`FAMILY` encodes the bounds above and is what the benchmark's headline set
uses; `HARDER` lifts the long-lived and peak-live bounds (long-lived blocks
up to 25 % of the capacity, few buffers at the peak), which makes cases that
are much harder than the family (fewer, larger, longer pieces to fit).

The construction replays a packing: a sweep over time steps keeps memory
[0, C) split into occupied and free address ranges; at each step the buffers
that end free their ranges, adjacent free ranges merge, and most free ranges
are cut into new buffers (sizes log-uniform; lifespans mostly short, some
long, the long ones small; with a per-case chance a range is stacked
longest-lived first, as allocators that keep long-lived tensors low do) or
left free for a while (holes: the load is below C most of the time).  New
buffers straddle the boundaries of the ones that ended, so the packing is not
a guillotine cut.  At one chosen step every free range is filled, so the load
there is exactly C: the lower bound (max load) equals the capacity, and the
offsets of the replay are a fitting plan by construction.  A draw whose
measures fall outside the family's bounds is redrawn (same seed, same case).

    python -m scripts.offset_cases OUT_DIR [--count 300] [--seed 0] [--harder]

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
class Family:
    """Bounds every case of a family meets (see the module docstring)."""

    long_max_share: float  # largest long-lived buffer, share of the capacity
    long_total_share: float  # total of the long-lived buffers, share of the capacity
    min_peak_live: int  # buffers live when the load first reaches its peak
    times_per_buffer: tuple[float, float]  # distinct start / end times per buffer
    long_share: tuple[float, float]  # range of the per-case share of new buffers living long
    max_size: tuple[float, float]  # range of the per-case largest new buffer (share)
    holes: tuple[float, float]  # range of the per-case share of freed memory left free
    steps: tuple[int, int]  # range of the per-case number of time steps


FAMILY = Family(
    long_max_share=0.025,
    long_total_share=0.31,
    min_peak_live=14,
    times_per_buffer=(0.45, 0.65),
    long_share=(0.05, 0.3),
    max_size=(0.2, 0.7),
    holes=(0.02, 0.2),
    steps=(60, 160),
)
HARDER = Family(
    long_max_share=0.25, long_total_share=1.0, min_peak_live=1, times_per_buffer=(0, 1),
    long_share=(0.05, 0.2),
    max_size=(0.2, 0.6), holes=(0.04, 0.35), steps=(40, 100),
)  # fmt: skip


@dataclass(frozen=True)
class FamilyStats:
    buffers: int
    long_max_share: float
    long_total_share: float
    peak_live: int
    times_per_buffer: float


def family_stats(rows: list[tuple[int, int, int]], capacity: int) -> FamilyStats:
    """The family's measures of (lower, upper, size) rows (one sweep, no pair loop)."""
    horizon = max(up for _, up, _ in rows) - min(lo for lo, _, _ in rows)
    long_sizes = [size for lo, up, size in rows if 2 * (up - lo) > horizon]
    events = sorted(
        [(lo, 1, size) for lo, _, size in rows] + [(up, -1, size) for _, up, size in rows]
    )
    load = live = peak = peak_live = 0  # ends sort before starts at a tie (half-open)
    for _, delta, size in events:
        load += delta * size
        live += delta
        if load > peak:
            peak, peak_live = load, live
    return FamilyStats(
        buffers=len(rows),
        long_max_share=max(long_sizes, default=0) / capacity,
        long_total_share=sum(long_sizes) / capacity,
        peak_live=peak_live,
        times_per_buffer=len({t for lo, up, _ in rows for t in (lo, up)}) / len(rows),
    )


def in_family(stats: FamilyStats, family: Family) -> bool:
    return (
        MIN_BUFFERS <= stats.buffers <= MAX_BUFFERS
        and stats.long_max_share <= family.long_max_share
        and stats.long_total_share <= family.long_total_share
        and stats.peak_live >= family.min_peak_live
        and family.times_per_buffer[0] <= stats.times_per_buffer <= family.times_per_buffer[1]
    )


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

    steps: int  # time steps of the sweep (A-F: about one distinct time per two buffers)
    long_share: float  # share of new buffers that live long
    holes: float  # share of freed memory left free for a while
    stacked: float  # chance that a refill puts its longest-lived buffers lowest
    max_size: int  # largest new buffer, in units
    long_max: int  # largest long-lived buffer, in units
    long_room: int  # total units long-lived buffers may take


def generate(seed: int, capacity: int = CAPACITY, family: Family = FAMILY) -> HardCase:
    """One case of the family; the same seed gives the same case."""
    rng = random.Random(seed)
    while True:  # redraw the knobs until the case meets the family's bounds
        case = _replay(rng, f"hard-{seed:03d}", capacity, family)
        if in_family(family_stats(case.rows, capacity), family):
            return case


def _replay(rng: random.Random, name: str, capacity: int, family: Family) -> HardCase:
    units = capacity // GRAIN
    shape = Shape(
        steps=rng.randint(*family.steps),
        long_share=rng.uniform(*family.long_share),
        holes=rng.uniform(*family.holes),
        max_size=max(1, int(units * rng.uniform(*family.max_size))),
        stacked=rng.uniform(0, 1),
        long_max=max(1, int(units * family.long_max_share)),
        long_room=int(units * family.long_total_share),
    )
    full_step = rng.randrange(shape.steps // 4, 3 * shape.steps // 4)
    rows: list[tuple[int, int, int]] = []
    offsets: list[int] = []
    live: list[tuple[int, int, int]] = []  # (end step, first unit, units)
    long_used = 0  # units of long-lived buffers so far
    for step in range(shape.steps):
        live = [b for b in live if b[0] > step]
        for lo, hi in _free_ranges(live, units):
            pieces = []  # (end step, units, hole)
            room = hi - lo
            while room > 0:
                hole = step != full_step and rng.random() < shape.holes
                span = _lifespan(rng, shape)
                long = not hole and 2 * min(span, shape.steps - step) > shape.steps
                if long and long_used + shape.long_max > shape.long_room:
                    span, long = _short_lifespan(rng, shape), False
                width = min(room, _width(rng, shape.long_max if long else shape.max_size))
                long_used += width if long else 0
                end = min(shape.steps, step + span)
                if hole and step < full_step:
                    end = min(end, full_step)  # free again by the full step
                pieces.append((end, width, hole))
                room -= width
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


def _width(rng: random.Random, largest: int) -> int:
    """A width in units: a few tiny, the rest log-uniform up to `largest`."""
    smallest = 1 if rng.random() < 0.15 else max(1, largest // 10)
    return max(1, round(math.exp(rng.uniform(math.log(smallest), math.log(largest)))))


def _lifespan(rng: random.Random, shape: Shape) -> int:
    if rng.random() < shape.long_share:
        return rng.randint(shape.steps // 2, shape.steps)
    return _short_lifespan(rng, shape)


def _short_lifespan(rng: random.Random, shape: Shape) -> int:
    return max(1, round(math.exp(rng.uniform(0, math.log(shape.steps / 3)))))


def write_cases(out: Path, count: int, seed: int = 0, family: Family = FAMILY) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(count):
        case = generate(seed + k, family=family)
        path = out / f"{case.name}.{case.capacity}.csv"
        path.write_text(case.csv())
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--harder", action="store_true", help="the HARDER bounds, not FAMILY")
    args = parser.parse_args()
    paths = write_cases(args.out, args.count, args.seed, HARDER if args.harder else FAMILY)
    print(f"wrote {len(paths)} cases to {args.out}")


if __name__ == "__main__":
    main()
