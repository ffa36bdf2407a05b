"""Benchmark: strong_search on generated cases with their removed pieces put back.

strong_search fits MiniMalloc-like challenging cases by guessing the pieces
removed from a perfect packing ("fillers", reference_solutions/README.md).
Two questions split what it misses into guessing and searching:
  - with the true removed pieces added as buffers (`truth`: every time of the
    horizon is then loaded to exactly the capacity), how often and how fast
    does the search fit?  A case missed here is a search-speed problem: no
    guess can help it within the time limit;
  - the same cases as contestants get them (`as given`).
With `--ranks`, also where the truth stands in the decomposer's order: the
planner writes its cheapest decompositions (STRONG_SEARCH_GUESSES=path, a
diagnostic; it does so only once it needs guesses), and the case's removed
pieces, normalized as the decomposer normalizes a guess (pieces of one lifespan
are one filler, pieces of one size meeting in time are one), are looked up in
that list: a rank, "absent" (not among them) or "-" (fitted before guessing).
Cases come from scripts/offset_cases.py (`HardCase.removed`). Times are CPU
seconds to the first fitting plan, as in benchmarks/offset_planners.py.
No assertions: figures only.

    python benchmarks/filler_truths.py [--start 900] [--count 50] [--seeds S ...]
        [--time-limit 10] [--jobs 2] [--ranks]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.offset_planners import ROOT, build, fit_table, run_case, run_set
from scripts.offset_cases import HardCase, generate

Filler = tuple[int, int, int]  # (lower, upper, size)


def normalized(pieces: list[Filler]) -> list[Filler]:
    """DeficitDecomposer::normalized: sizes of one lifespan summed, then pieces
    of one size chained where one ends as the next begins; sorted."""
    by_span: dict[tuple[int, int], int] = defaultdict(int)
    for lo, up, size in pieces:
        by_span[lo, up] += size
    by_start: dict[tuple[int, int], list[int]] = defaultdict(list)  # (start, size) -> ends
    for (lo, up), size in sorted(by_span.items()):
        by_start[lo, size].append(up)
    out = []
    while by_start:
        start, size = min(by_start)
        end = _take(by_start, (start, size))
        while (end, size) in by_start:
            end = _take(by_start, (end, size))
        out.append((start, end, size))
    return sorted(out)


def _take(by_start: dict[tuple[int, int], list[int]], key: tuple[int, int]) -> int:
    ends = by_start[key]
    end = ends.pop(0)  # the smallest end first, as the multimap's find gives
    if not ends:
        del by_start[key]
    return end


def read_guesses(path: Path) -> dict[int, list[Filler]]:
    """The planner's STRONG_SEARCH_GUESSES file (guess,lower,upper,size), by guess."""
    guesses: dict[int, list[Filler]] = defaultdict(list)
    for line in path.read_text().split()[1:]:
        g, lo, up, size = map(int, line.split(","))
        guesses[g].append((lo, up, size))
    return guesses


def truth_rank(exe: Path, case: HardCase, csv: Path, tmp: Path) -> str:
    """Where the case's normalized removed pieces stand in the planner's guesses."""
    dump = tmp / "guesses.csv"
    dump.unlink(missing_ok=True)
    # the decomposer runs only where the merged guesses do not fit: skip them
    env = {"STRONG_SEARCH_GUESSES": str(dump), "STRONG_SEARCH_NO_MERGE": "1"}
    run_case(exe, csv, case.capacity, 3, env)
    if not dump.exists():
        return "-"
    guesses = read_guesses(dump)
    truth = normalized([(lo, up, size) for lo, up, size, _ in case.removed])
    ranks = [g for g in sorted(guesses) if normalized(guesses[g]) == truth]
    return str(ranks[0]) if ranks else f"absent ({len(guesses)})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--start", type=int, default=900, help="first seed")
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--seeds", type=int, nargs="+", help="these seeds instead of a range")
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--ranks", action="store_true", help="the truth's rank among the guesses")
    args = parser.parse_args()
    console = Console()
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(ROOT / "reference_solutions" / "strong_search", Path(tmp))
        sets: dict[str, list[tuple[Path, int]]] = {"as given": [], "truth": []}
        seeds = args.seeds or list(range(args.start, args.start + args.count))
        cases = [generate(seed) for seed in seeds]
        for case in cases:
            for name, text in (("as given", case.csv()), ("truth", case.with_removed().csv())):
                path = Path(tmp, name.replace(" ", "-"), f"{case.name}.{case.capacity}.csv")
                path.parent.mkdir(exist_ok=True)
                path.write_text(text)
                sets[name].append((path, case.capacity))
        runs = {name: run_set({"strong_search": exe}, paths, args.time_limit, args.jobs)
                for name, paths in sets.items()}  # fmt: skip
        title = f"seeds {seeds[0]}-{seeds[-1]}" if not args.seeds else f"{len(seeds)} seeds"
        for name, rs in runs.items():
            console.print(fit_table(f"{title}, {name}", sets[name], rs))
        given, truth = runs["as given"]["strong_search"], runs["truth"]["strong_search"]
        names = [path.name.split(".")[0] for path, _ in sets["truth"]]
        for label, pick in (
            ("missed as given, fitted with the truth (guessing)", lambda g, t: not g and t),
            ("missed with the truth too (search speed)", lambda g, t: not g and not t),
            ("fitted as given, missed with the truth", lambda g, t: g and not t),
        ):
            hit = [n for n, g, t in zip(names, given, truth, strict=True) if pick(g.fits, t.fits)]
            console.print(f"{label}: {hit or 'none'}")
        if args.ranks:
            for case, (path, _), g in zip(cases, sets["as given"], given, strict=True):
                rank = truth_rank(exe, case, path, Path(tmp))
                fitted = "fitted" if g.fits else "missed"
                console.print(f"{case.name} {fitted}: truth rank {rank}")
    console.print(f'{{"time_limit_s": {args.time_limit}, "jobs": {args.jobs}}}')


if __name__ == "__main__":
    main()
