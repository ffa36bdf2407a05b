"""Benchmark: strong_search beside best_fit on hard `offset` cases and real traces.

Sets: generated MiniMalloc-like cases (scripts/offset_cases.py, capacity =
lower bound; `--family replay` for the earlier construction), MiniMalloc's
challenging A-F (capacity 1048576) and the idealloc real traces (no capacity
of their own: 2^50). Times are CPU seconds (the machine is shared, wall time
says little). Every planner is built
once with the contest's flags and run directly (no sandbox: this measures the
planners, not the judge) with MEMORACE_CASE_DIR / MEMORACE_OUT_DIR; every plan
is checked with the judge's verifier. Prints, per set, the fraction fitted and
the CPU time to the first fitting plan (strong_search logs each plan it writes on
stderr: `plan peak=P t=T cpu=C`; best_fit writes once, so its run time), and for
idealloc each planner's peak / lower bound. No assertions: figures only.

    python benchmarks/offset_planners.py [--count 300] [--subset N] [--time-limit 10]
        [--trace-time-limit 30] [--jobs 2] [--set generated|minimalloc|idealloc|all]
        [--start S] [--planners best_fit.cpp strong_search] [--family sliced|replay]

MiniMalloc's own solver is not run: its sources are not on this machine (its
Abseil dependency is: `apt-get install libabsl-dev`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from judge.submission import CXX_FLAGS
from judge.types import get_type
from judge.verdict import Verdict
from judge.verifier import check_plan

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # scripts/ is not installed: run from a checkout
from scripts.offset_cases import FAMILY, REPLAY, write_cases  # noqa: E402

DATA = Path(os.environ.get("MEMORACE_SHARED_DATA", ROOT.parent / "shared" / "data"))
PLANNERS = ("best_fit.cpp", "strong_search")  # strong_search/: a folder of modules
PLAN_LINE = re.compile(r"plan peak=(\d+) t=([0-9.]+) cpu=([0-9.]+)")
OFFSET = get_type("offset")


@dataclass(frozen=True)
class Run:
    fits: bool  # a valid plan within the capacity
    peak: int
    lower_bound: int
    first_fit_s: float | None  # CPU seconds when the first fitting plan was written
    final_s: float  # CPU seconds when the final plan was written
    wall_s: float


def build(source: Path, out: Path, defines: tuple[str, ...] = ()) -> Path:
    """Compiles a .cpp file, or a folder's main.cpp (strong_search/: one unit that
    includes its modules), with the contest's flags (`defines`: -D names, e.g. a test's
    checks); the program is named after the file or the folder."""
    exe = out / source.stem
    unit = source / "main.cpp" if source.is_dir() else source
    flags = [f"-D{d}" for d in defines]
    subprocess.run(["g++", *CXX_FLAGS, *flags, "-o", exe, unit], check=True)
    return exe


def run_case(
    exe: Path, case_csv: Path, capacity: int, time_limit_s: float, env: dict | None = None
) -> Run:
    """Runs the planner on one case (`env`: more variables, e.g. a diagnostic's)."""
    case = OFFSET.parse_case(case_csv, capacity)
    lower_bound = OFFSET.lower_bound(case)
    with tempfile.TemporaryDirectory() as tmp:
        plan, _, stderr, cpu, wall = run_planner(exe, case, Path(tmp), time_limit_s, env)
        verification, _ = check_plan(OFFSET, case, lower_bound, plan)
    fits = verification.verdict == Verdict.OK
    first = cpu if fits else None
    logged = [(int(p), float(t)) for p, _, t in PLAN_LINE.findall(stderr)]
    if fits and logged:
        first = next((t for p, t in logged if p <= capacity), cpu)
    final = logged[-1][1] if logged else cpu
    return Run(fits, verification.peak, lower_bound, first, final, wall)


def run_planner(
    exe: Path, case, work: Path, time_limit_s: float, env: dict | None = None
) -> tuple[Path, int, str, float, float]:
    """Runs the planner on a parsed case per the planner contract, in `work`/case and
    `work`/out; returns the plan's path, its wait status (os.waitstatus_to_exitcode),
    its stderr, CPU and wall seconds."""
    case_dir, out_dir = work / "case", work / "out"
    case_dir.mkdir()
    out_dir.mkdir()
    limits = {"time_limit_s": time_limit_s, "memory_limit_mb": 4096, "name": Path(case.path).stem}
    OFFSET.write_planner_input(case, case_dir, limits)
    dirs = {"MEMORACE_CASE_DIR": str(case_dir), "MEMORACE_OUT_DIR": str(out_dir)}
    environ = {**os.environ, **(env or {}), **dirs}
    status, stderr, cpu, wall = _run_timed(exe, environ, work / "stderr", time_limit_s + 30)
    return out_dir / "plan.csv", status, stderr, cpu, wall


def _run_timed(exe: Path, env: dict, log: Path, timeout_s: float) -> tuple[int, str, float, float]:
    """Runs `exe`; returns its wait status, stderr, CPU seconds (user + system) and
    wall seconds.
    os.wait4 gives this child's own usage, so parallel runs do not mix."""
    start = time.monotonic()
    with log.open("w") as err:
        proc = subprocess.Popen([exe], env=env, stdout=subprocess.DEVNULL, stderr=err)
        try:
            _, status, usage = _wait4(proc.pid, timeout_s)
        finally:
            proc.returncode = 0  # reaped by wait4 (or killed): Popen must not wait again
    return status, log.read_text(), usage.ru_utime + usage.ru_stime, time.monotonic() - start


def _wait4(pid: int, timeout_s: float) -> tuple[int, int, os.struct_rusage]:
    deadline = time.monotonic() + timeout_s
    while True:
        done = os.wait4(pid, os.WNOHANG)
        if done[0] == pid:
            return done
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            return os.wait4(pid, 0)
        time.sleep(0.01)


def run_set(
    exes: dict[str, Path], cases: list[tuple[Path, int]], limit: float, jobs: int
) -> dict[str, list[Run]]:
    out = {}
    with ThreadPoolExecutor(jobs) as pool:
        for name, exe in exes.items():
            out[name] = list(pool.map(lambda c, e=exe: run_case(e, c[0], c[1], limit), cases))
    return out


def fit_table(title: str, cases: list[tuple[Path, int]], runs: dict[str, list[Run]]) -> Table:
    table = Table(title=f"{title}: {len(cases)} cases (first fit in CPU seconds)")
    for col in ("planner", "fitted", "first fit p50", "p90", "max", "first fit <= 10 s CPU"):
        table.add_column(col, justify="right")
    for name, rs in runs.items():
        times = sorted(r.first_fit_s for r in rs if r.first_fit_s is not None)
        within = sum(1 for t in times if t <= 10)
        table.add_row(
            name,
            f"{len(times)}/{len(rs)} ({100 * len(times) / len(rs):.1f} %)",
            f"{statistics.median(times):.2f}" if times else "-",
            f"{times[int(0.9 * (len(times) - 1))]:.2f}" if times else "-",
            f"{max(times):.2f}" if times else "-",
            f"{within}/{len(rs)}",
        )
    return table


def case_table(
    title: str, cases: list[tuple[Path, int]], runs: dict[str, list[Run]], final: bool = False
) -> Table:
    """Peak / lower bound per case, with when the first fitting plan (or, with
    `final`, the final plan) was written."""
    table = Table(title=f"{title}: peak / lower bound ({'final plan' if final else 'first fit'} s)")
    table.add_column("case", justify="left")
    table.add_column("lower bound", justify="right")
    for name in runs:
        table.add_column(name, justify="right")
    for i, (path, _) in enumerate(cases):
        cells = []
        for rs in runs.values():
            r = rs[i]
            at = r.final_s if final else r.first_fit_s
            when = f" ({at:.2f})" if at is not None else " (no fit)"
            cells.append(f"{r.peak / r.lower_bound:.4f}{when}")
        lower_bound = next(iter(runs.values()))[i].lower_bound
        table.add_row(path.name.split(".")[0], str(lower_bound), *cells)
    return table


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=300, help="generated cases (seeds 0..)")
    parser.add_argument("--subset", type=int, default=0, help="run only the first N generated")
    parser.add_argument("--start", type=int, default=0, help="first generated seed (chunks)")
    parser.add_argument("--planners", nargs="+", default=list(PLANNERS), choices=PLANNERS)
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument(
        "--trace-time-limit", type=float, default=30.0, help="idealloc (the problems' limit)"
    )
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--set", choices=["generated", "minimalloc", "idealloc", "all"])
    parser.add_argument("--family", choices=["sliced", "replay"], default="sliced")
    args = parser.parse_args()
    chosen = args.set or "all"
    console = Console()
    with tempfile.TemporaryDirectory() as tmp:
        exes = {p: build(ROOT / "reference_solutions" / p, Path(tmp)) for p in args.planners}
        if chosen in ("generated", "all"):
            count = args.subset or args.count
            family = FAMILY if args.family == "sliced" else REPLAY
            paths = write_cases(Path(tmp, "gen"), count, seed=args.start, family=family)
            cases = [(p, 1 << 20) for p in paths]
            runs = run_set(exes, cases, args.time_limit, args.jobs)
            title = f"generated {args.family} cases (capacity = lower bound)"
            console.print(fit_table(title, cases, runs))
            for name, rs in runs.items():
                failed = [cases[i][0].name.split(".")[0] for i, r in enumerate(rs) if not r.fits]
                console.print(f"{name} did not fit: {failed or 'none'}")
        if chosen in ("minimalloc", "all"):
            paths = sorted((DATA / "minimalloc").glob("[A-F].*.csv"))
            cases = [(p, int(p.name.split(".")[1])) for p in paths]
            runs = run_set(exes, cases, args.time_limit, args.jobs)
            console.print(fit_table("MiniMalloc A-F (capacity 1048576)", cases, runs))
            console.print(case_table("MiniMalloc A-F", cases, runs))
        if chosen in ("idealloc", "all"):
            cases = [(p, 1 << 50) for p in sorted((DATA / "idealloc").glob("*.csv"))]
            runs = run_set(exes, cases, args.trace_time_limit, args.jobs)
            title = f"idealloc real traces (capacity 2^50, {args.trace_time_limit:g} s)"
            console.print(case_table(title, cases, runs, final=True))
    limits = {"time_limit_s": args.time_limit, "trace_time_limit_s": args.trace_time_limit}
    console.print(json.dumps({**limits, "jobs": args.jobs}))


if __name__ == "__main__":
    main()
