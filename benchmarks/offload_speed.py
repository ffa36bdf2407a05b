"""Benchmark: the `offload` exact verifier (static rules + simulation) and the numpy
replay on the largest shipped offload case, in residencies per second.

    python benchmarks/offload_speed.py [--planner offload_strong.py]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judge.package import load_cases, load_problem  # noqa: E402
from judge.replay import replay  # noqa: E402
from judge.types.offload.verifier import lay_out, simulate, verify  # noqa: E402
from scripts.gpu_check import make_plan  # noqa: E402


def best_of(runs: int, fn) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--planner", default=None, help="default: the greedy reference")
    args = parser.parse_args()
    problem = load_problem(ROOT / "problems" / "train-offload")
    largest = max(load_cases(problem), key=lambda lc: len(lc.case.uses))
    with tempfile.TemporaryDirectory() as tmp:
        if args.planner:
            import scripts.gpu_check as gc

            gc.PLANNERS["offload"] = args.planner
        plan = problem.ptype.parse_plan(make_plan(largest, problem, Path(tmp)), largest.case)
    case, n = largest.case, len(plan)
    exact = verify(case, plan)
    assert exact.verdict == "OK", exact.message
    lay = lay_out(case, plan)
    t_verify = best_of(3, lambda: verify(case, plan))
    t_sim = best_of(3, lambda: simulate(case, plan, lay))
    t_replay = best_of(3, lambda: replay("offload", case, plan))
    result = replay("offload", case, plan)
    print(f"case {largest.spec.name}: {len(case)} tensors, {len(case.uses)} uses, {n} residencies")
    rows = [
        ("exact verify (rules + simulation)", t_verify),
        ("simulation alone", t_sim),
        (f"numpy replay ({result.cells:,} cells of {result.cell_bytes} B)", t_replay),
    ]
    for label, seconds in rows:
        print(f"  {label:52} {seconds * 1000:8.1f} ms {n / seconds:12,.0f} residencies/s")
    print(f"  makespan {exact.makespan:,.1f} µs vs compute {int(case.steps.sum()):,} µs")


if __name__ == "__main__":
    main()
