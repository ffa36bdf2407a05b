"""Benchmark: can strong_search's DeficitDecomposer explain the true removed pieces?

strong_search guesses the pieces removed from a perfect packing by sweeping the
deficit profile (capacity - load) and explaining each change with one of a
few moves (reference_solutions/README.md, "fillers"). This replays the
generator's truth (scripts/offset_cases.py, `HardCase.removed`, normalized as
the decomposer normalizes a guess) over the same events and names the move
each event needs, so it tells which moves the decomposer lacks and how often
the truth is out of its reach, with no planner run:
  - a rise: `open` (a filler begins), `merge` / `merge2` (one or two open
    fillers end and one of their sum plus the rise begins), `mergeN` (more),
    `rise-joint` (part of an open group ends while a larger piece begins);
  - a fall: `exact`, `pair`, `split` (part of a group ends), `reopen` /
    `reopen2` (one or two end, the difference begins), `several` (the
    youngest end, the last in part), `fall-joint` (part of a group ends and a
    smaller piece begins), `other` (anything else); `(exact exists)` or
    `(pair exists)` when the decomposer, which then offers only those, cannot
    take the move;
  - `silent`: a piece begins or ends where the deficit does not change.
Open fillers are grouped by start (the decomposer keeps one filler per start).
No assertions: figures only.

    python benchmarks/filler_reach.py [--start 3000] [--count 400] [--cases]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.filler_truths import Filler, normalized
from scripts.offset_cases import HardCase, generate

# Moves the decomposer has (DeficitDecomposer::options).
REACHABLE = {"open", "merge", "merge2", "exact", "pair", "split", "reopen", "reopen2", "several"}


def deficit_changes(case: HardCase) -> list[tuple[int, int]]:
    """(time, change) where capacity - load changes; 0 from the last time on."""
    delta: Counter[int] = Counter()
    for lo, up, size in case.rows:
        delta[lo] += size
        delta[up] -= size
    changes, load, deficit = [], 0, 0
    times = sorted(delta)
    for k, t in enumerate(times):
        load += delta[t]
        want = 0 if k == len(times) - 1 else max(0, case.capacity - load)
        if want != deficit:
            changes.append((t, want - deficit))
        deficit = want
    return changes


def _groups(pieces: list[Filler], live) -> Counter[int]:
    """Open size per start among the pieces `live(lower, upper)` keeps."""
    out: Counter[int] = Counter()
    for lo, up, size in pieces:
        if live(lo, up):
            out[lo] += size
    return out


def move(pieces: list[Filler], t: int, change: int) -> str:
    """The move the truth makes at the event (t, change)."""
    before = _groups(pieces, lambda lo, up: lo < t <= up)
    after = _groups(pieces, lambda lo, up: lo <= t < up)
    cut = {k: before[k] - after[k] for k in before if before[k] != after[k]}
    full = [k for k in cut if k not in after]
    part = [k for k in cut if k in after]
    opens = t in after
    if change > 0:
        if part:
            return "rise-joint" if len(part) == 1 and not full else "other"
        return "open" if not full else f"merge{len(full) if len(full) > 1 else ''}"
    fall, sizes = -change, sorted(before.values())
    name = _fall_move(before, cut, full, part, opens, fall)
    if name != "exact" and fall in sizes:
        return f"{name} (exact exists)"
    pairs = any(sizes[a] + sizes[b] == fall for a in range(len(sizes)) for b in range(a))
    if name not in ("exact", "pair") and pairs:
        return f"{name} (pair exists)"
    return name


def _fall_move(before, cut, full, part, opens, fall) -> str:
    if not part and len(full) in (1, 2):
        names = ("reopen", "reopen2") if opens else ("exact", "pair")
        return names[len(full) - 1]
    if not full and len(part) == 1:
        return "fall-joint" if opens else "split"
    if not opens:  # several: the youngest end, the last of them in part
        left, expect = fall, {}
        for k in sorted(before, reverse=True):
            if left <= 0:
                break
            expect[k] = min(left, before[k])
            left -= expect[k]
        if expect == cut:
            return "several"
    return "other"


def case_moves(case: HardCase) -> list[str]:
    truth = normalized([(lo, up, size) for lo, up, size, _ in case.removed])
    changes = deficit_changes(case)
    times = {t for t, _ in changes}
    moves = ["silent" for lo, up, _ in truth for t in (lo, up) if t not in times]
    return moves + [move(truth, t, change) for t, change in changes[:-1]]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--start", type=int, default=3000, help="first seed")
    parser.add_argument("--count", type=int, default=400)
    parser.add_argument("--seeds", type=int, nargs="+", help="these seeds instead of a range")
    parser.add_argument("--cases", action="store_true", help="each case's missing moves")
    args = parser.parse_args()
    console = Console()
    seeds = args.seeds or list(range(args.start, args.start + args.count))
    moves: Counter[str] = Counter()
    verdicts: Counter[str] = Counter()
    for seed in seeds:
        case = generate(seed)
        needed = case_moves(case)
        moves.update(needed)
        missing = [m for m in needed if m not in REACHABLE]
        verdicts["reachable" if not missing else "out of reach"] += 1
        if args.cases and missing:
            console.print(f"{case.name}: {sorted(Counter(missing).items())}")
    table = Table(title=f"{len(seeds)} seeds: the moves the true pieces need")
    for column in ("move", "events", "decomposer has it"):
        table.add_column(column)
    for name, count in moves.most_common():
        table.add_row(name, str(count), "yes" if name in REACHABLE else "no")
    console.print(table)
    console.print(dict(verdicts))


if __name__ == "__main__":
    main()
