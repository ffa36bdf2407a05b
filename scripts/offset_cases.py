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
    largest buffer / capacity             10-68 %         (follows the cuts)
    median buffer / capacity              1.8-7.8 %       (follows the cuts)
    area density (area / horizon x peak)  0.66-0.98       (follows the removals)

and what singles out their structure (the earlier replay construction's
range in brackets):

    largest buffer area / (2^20 x 2^20)   0.3-1.3 %, q90 ~ max   [4-7 %]
    sd of log2(buffer area)               1.2-1.5 (F: 0.3)        [2.3-2.9]
    corr(log size, log lifespan)          -0.60 to -0.78          [0 to -0.3]
    times and sizes                       multiples of 1024, A-E span [0, 2^20)

Every buffer's area is capped and size and lifespan are strongly
anti-correlated: A-E are what recursive guillotine cuts of the 2^20 x 2^20
square (time x address) give when every piece larger than a cap is cut in two
along a random axis at a uniformly random 1024-multiple, until all pieces are
below the cap (simulated: n ~ 2 / cap, times per buffer 0.45-0.52, area sd
1.3-1.5, corr -0.70 to -0.79, area q10 ~ cap / 13: each matches A-E).  F's
pieces are near-equal (sizes 4.6-10.5 %, lifespans 2.3-5.8 %): cuts across
the longer side near its middle.  Then some pieces are removed (density 0.95-
0.98 for A-C, 0.89 for D and E, 0.66 for F).  So `FAMILY` ("sliced") draws a
cap (0.65-1.35 % of the square: 150-300 pieces), cuts the square, with chance
1/6 in F's way, then removes a share of the pieces (2-12 %, F's way 20-35 %),
sparing those live at one chosen time, so the load there is exactly C: the
lower bound equals the capacity (as for A, B, E and F; C and D peak at 99 %
and 94 %, so this is at least as tight as the family), and the uncut plan fits
by construction.  A draw outside the bounds of the first table is redrawn.

`REPLAY` is the earlier construction (kept to compare): a sweep over time
steps keeps memory [0, C) split into occupied and free ranges, at each step
free ranges are cut into new buffers (sizes log-uniform; lifespans mostly
short, some long, the long ones small) or left free a while (holes), and at
one step every free range is filled so the load there is C.  Its buffers
straddle the boundaries of the ones that ended (no guillotine structure) and
its areas are uncapped: at A-C's density it is much harder than A-C.
`HARDER` is the replay with the long-lived and peak-live bounds lifted (long-
lived blocks up to 25 % of the capacity, few buffers at the peak).

    python -m scripts.offset_cases OUT_DIR [--count 300] [--seed 0] [--replay | --harder]
        [--removed DIR]

writes `hard-NNN.1048576.csv` files (MiniMalloc CSV, the capacity in the name:
`memorace problem import-minimalloc OUT_DIR` reads them) and, with `--removed`,
what each construction left out of its perfect packing (`hard-NNN.removed.csv`,
id,lower,upper,size,offset): the truth a filler guess aims at
(benchmarks/filler_truths.py).
"""

from __future__ import annotations

import argparse
import dataclasses
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
    sliced: bool = False  # guillotine cuts of the square (see above), not the replay


REPLAY = Family(
    long_max_share=0.025,
    long_total_share=0.31,
    min_peak_live=14,
    times_per_buffer=(0.45, 0.65),
    long_share=(0.05, 0.3),
    max_size=(0.2, 0.7),
    holes=(0.02, 0.2),
    steps=(60, 160),
)
FAMILY = dataclasses.replace(REPLAY, sliced=True)  # the replay knobs are unused
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
    # What the construction left out of its perfect packing, as (lower, upper,
    # size, offset): the sliced way's removed pieces, the replay's holes.  With
    # them added every time of the horizon is loaded to exactly `capacity`.
    removed: list[tuple[int, int, int, int]] = dataclasses.field(default_factory=list)

    def with_removed(self) -> HardCase:
        """The perfect packing: the removed pieces as buffers at their offsets."""
        rows = self.rows + [(lo, up, size) for lo, up, size, _ in self.removed]
        offsets = self.offsets + [y for *_, y in self.removed]
        return HardCase(self.name, self.capacity, rows, offsets)

    def removed_csv(self) -> str:
        lines = ["id,lower,upper,size,offset"]
        lines += [f"{i},{lo},{up},{size},{y}" for i, (lo, up, size, y) in enumerate(self.removed)]
        return "\n".join(lines) + "\n"

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
        make = _slice if family.sliced else _replay
        case = make(rng, f"hard-{seed:03d}", capacity, family)
        if in_family(family_stats(case.rows, capacity), family):
            return case


# The sliced construction (FAMILY): area cap per piece, share of the square.
SLICE_CAP = (0.0065, 0.0135)
EVEN_CAP = (0.003, 0.0045)  # F's way: near-equal pieces, more of them removed
REMOVED = (0.02, 0.12)
EVEN_REMOVED = (0.2, 0.35)

Piece = tuple[int, int, int, int]  # time [t0, t1) x address [y0, y1), in units


def _slice(rng: random.Random, name: str, capacity: int, family: Family) -> HardCase:
    units = capacity // GRAIN
    even = rng.random() < 1 / 6
    cap = rng.uniform(*(EVEN_CAP if even else SLICE_CAP)) * units * units
    pieces = _cut(rng, (0, units, 0, units), cap, even)
    full = rng.randrange(units)  # the load stays exactly C at this time
    removed = rng.uniform(*(EVEN_REMOVED if even else REMOVED))
    kept: list[Piece] = []
    gone: list[Piece] = []
    for p in pieces:  # a draw only for the pieces not live at `full`
        (kept if p[0] <= full < p[1] or rng.random() >= removed else gone).append(p)
    rng.shuffle(kept)  # the file order tells nothing about the packing
    return HardCase(
        name=name,
        capacity=capacity,
        rows=[(t0 * GRAIN, t1 * GRAIN, (y1 - y0) * GRAIN) for t0, t1, y0, y1 in kept],
        offsets=[y0 * GRAIN for _, _, y0, _ in kept],
        removed=[
            (t0 * GRAIN, t1 * GRAIN, (y1 - y0) * GRAIN, y0 * GRAIN) for t0, t1, y0, y1 in gone
        ],
    )


def _cut(rng: random.Random, square: Piece, cap: float, even: bool) -> list[Piece]:
    """Cuts every piece above `cap` in two until none is: along a random axis at
    a uniform position, or (`even`) across the longer side near its middle."""
    todo, done = [square], []
    while todo:
        t0, t1, y0, y1 = piece = todo.pop()
        width, height = t1 - t0, y1 - y0
        if width * height <= cap or (width < 2 and height < 2):
            done.append(piece)
            continue
        in_time = width > height if even and width != height else rng.random() < 0.5
        in_time = (in_time or height < 2) and width >= 2
        lo, hi = (t0, t1) if in_time else (y0, y1)
        middle = round(lo + (hi - lo) * rng.uniform(0.4, 0.6))
        at = middle if even else rng.randint(lo + 1, hi - 1)
        at = min(max(at, lo + 1), hi - 1)
        if in_time:
            todo += [(t0, at, y0, y1), (at, t1, y0, y1)]
        else:
            todo += [(t0, t1, y0, at), (t0, t1, at, y1)]
    return done


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
    holes: list[tuple[int, int, int, int]] = []  # (step, end, units, first unit)
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
                else:
                    holes.append((step, end, width, first))
                first += width
    scale = capacity // shape.steps // GRAIN * GRAIN  # times in GRAIN multiples
    order = list(range(len(rows)))
    rng.shuffle(order)  # the file order tells nothing about the packing
    return HardCase(
        name=name,
        capacity=capacity,
        rows=[(rows[i][0] * scale, rows[i][1] * scale, rows[i][2] * GRAIN) for i in order],
        offsets=[offsets[i] * GRAIN for i in order],
        removed=[(lo * scale, up * scale, w * GRAIN, y * GRAIN) for lo, up, w, y in holes],
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


def write_cases(
    out: Path, count: int, seed: int = 0, family: Family = FAMILY, removed: Path | None = None
) -> list[Path]:
    """Writes the cases to `out` and, given `removed`, each case's removed pieces
    (`HardCase.removed`) there as `hard-NNN.removed.csv` (id,lower,upper,size,offset)."""
    out.mkdir(parents=True, exist_ok=True)
    if removed:
        removed.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(count):
        case = generate(seed + k, family=family)
        path = out / f"{case.name}.{case.capacity}.csv"
        path.write_text(case.csv())
        paths.append(path)
        if removed:
            (removed / f"{case.name}.removed.csv").write_text(case.removed_csv())
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--harder", action="store_true", help="the HARDER bounds, not FAMILY")
    parser.add_argument("--replay", action="store_true", help="the REPLAY construction")
    parser.add_argument(
        "--removed", type=Path, metavar="DIR", help="also write each case's removed pieces here"
    )
    args = parser.parse_args()
    family = HARDER if args.harder else REPLAY if args.replay else FAMILY
    paths = write_cases(args.out, args.count, args.seed, family, args.removed)
    print(f"wrote {len(paths)} cases to {args.out}")
    if args.removed:
        print(f"wrote their removed pieces to {args.removed}")


if __name__ == "__main__":
    main()
