"""Benchmark: strong_search on generated cases with their removed pieces put back.

strong_search fits MiniMalloc-like challenging cases by guessing the pieces
removed from a perfect packing ("fillers", reference_solutions/README.md).
Two questions split what it misses into guessing and searching:
  - with the true removed pieces added as buffers (`truth`: every time of the
    horizon is then loaded to exactly the capacity), how often and how fast
    does the search fit?  A case missed here is a search-speed problem: no
    guess can help it within the time limit;
  - the same cases as contestants get them (`as given`).
Cases come from scripts/offset_cases.py (`HardCase.removed`). Times are CPU
seconds to the first fitting plan, as in benchmarks/offset_planners.py.
No assertions: figures only.

    python benchmarks/filler_truths.py [--start 900] [--count 50] [--seeds S ...]
        [--time-limit 10] [--jobs 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.offset_planners import ROOT, build, fit_table, run_set
from scripts.offset_cases import HardCase, generate


def with_truth(case: HardCase) -> str:
    """The case's CSV with its removed pieces appended as buffers."""
    rows = case.rows + [(lo, up, size) for lo, up, size, _ in case.removed]
    lines = ["id,lower,upper,size"] + [f"{i},{lo},{up},{s}" for i, (lo, up, s) in enumerate(rows)]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--start", type=int, default=900, help="first seed")
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--seeds", type=int, nargs="+", help="these seeds instead of a range")
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    console = Console()
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(ROOT / "reference_solutions" / "strong_search.cpp", Path(tmp))
        sets: dict[str, list[tuple[Path, int]]] = {"as given": [], "truth": []}
        seeds = args.seeds or list(range(args.start, args.start + args.count))
        for seed in seeds:
            case = generate(seed)
            for name, text in (("as given", case.csv()), ("truth", with_truth(case))):
                path = Path(tmp, name.replace(" ", "-"), f"{case.name}.{case.capacity}.csv")
                path.parent.mkdir(exist_ok=True)
                path.write_text(text)
                sets[name].append((path, case.capacity))
        runs = {name: run_set({"strong_search": exe}, cases, args.time_limit, args.jobs)
                for name, cases in sets.items()}  # fmt: skip
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
    console.print(f'{{"time_limit_s": {args.time_limit}, "jobs": {args.jobs}}}')


if __name__ == "__main__":
    main()
