"""Benchmark: the reference planners on the real cases of ../shared/data.

MiniMalloc's challenging cases A-F at capacity 1048576 (most have a lower
bound equal to the capacity: only a plan with zero fragmentation fits), and
the idealloc cases (ResNet-50, IOPDDL) at an unbounded capacity. Prints each
planner's verdict and peak / lower bound, and the strong planner's time.

    python benchmarks/planners.py [--time-limit 60] [--set minimalloc|idealloc|all]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from judge.importer import import_minimalloc
from judge.pipeline import judge_planner
from judge.verdict import Verdict

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("MEMORACE_SHARED_DATA", ROOT.parent / "shared" / "data"))
PLANNERS = ["naive.py", "greedy_size.cpp", "best_fit.cpp", "strong_search.tar.gz"]
SETS = {"minimalloc": None, "idealloc": 2**50}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--set", choices=[*SETS, "all"], default="all")
    args = parser.parse_args()
    console = Console()
    for name, capacity in SETS.items():
        if args.set not in (name, "all"):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            problem = import_minimalloc(DATA / name, Path(tmp), name, capacity)
            reports = {
                p: judge_planner(
                    problem, ROOT / "reference_solutions" / p, time_limit_s=args.time_limit
                )
                for p in PLANNERS
            }
            counts = [_count(spec.path) for spec in problem.cases]
        table = Table(
            caption="* over capacity: INVALID_PLAN (the figure shows by how much)",
            title=f"{name}: peak / lower bound (capacity "
            f"{'from file names' if capacity is None else capacity})",
        )
        for col in ("case", "buffers", "lower bound", *PLANNERS, "strong time s"):
            table.add_column(col, justify="left" if col == "case" else "right")
        for i, spec in enumerate(problem.cases):
            cells = []
            for p in PLANNERS:
                r = reports[p].results[i]
                over = "past the capacity" in r.message
                if r.verdict == Verdict.OK or over:  # over capacity: still show how far off
                    mark = "*" if over else ""
                    cells.append(f"{r.peak / r.lower_bound:.4f}{mark}")
                else:
                    cells.append(str(r.verdict))
            strong = reports["strong_search.tar.gz"].results[i]
            table.add_row(
                spec.name,
                str(counts[i]),
                str(strong.lower_bound),
                *cells,
                f"{strong.time_s:.2f}",
            )
        console.print(table)


def _count(path: Path) -> int:
    with path.open() as fh:
        return sum(1 for _ in fh) - 1


if __name__ == "__main__":
    main()
