"""Calibration of the `offload` problems: per case, the naive and greedy reference
planners' scores (lower bound / makespan), how busy the host links are in each plan
(the busiest copy engine, NVMe's included: time with a copy on it / makespan),
and whether each plan is valid. The strong planner is run from its source
(reference_solutions/offload_strong_v2/strong.py, v2 cases only: on v1 ones it hands
over to offload_strong_v1/, judged by tests/test_offload_planners.py) with a time limit
of --strong-limit seconds per case (default 15; it searches 75 % of it, at most limit - 4).
Each cell ends with the planner's CPU time and, in brackets, its wall time: the strong
planner's search stops on wall time, so on a loaded machine it searches less.

infer-offload v2 is FlexGen-like serving under a prompt load chosen from the
compute/transfer balance (its generator's docstring): each engine step prefills about
FLOPS / link bandwidth prompt tokens, as long as streaming the weights once, so the
strong plan keeps the link busy 40-80 % as on train-offload. Version 1's windows (one
request per step, decode passes that stream the weights) were link-bound (88-99 %).

    python benchmarks/offload_calibration.py [--strong-limit S] [slug ...]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from judge.package import load_problem
from judge.types import get_type
from judge.types.offload.verifier import simulate
from judge.verdict import Verdict

ROOT = Path(__file__).resolve().parents[1]
PLANNERS = {
    "naive": "offload_naive.py",
    "greedy": "offload_greedy/offload_greedy.py",
    "strong": "offload_strong_v2/strong.py",
}
OFFLOAD = get_type("offload")
V2_KEYS = {"h2d_latency", "d2h_latency", "host_capacity", "nvme"}


def run_planner(planner: str, case_body: dict, where: Path) -> tuple[Path, tuple[float, float]]:
    (where / "c").mkdir(parents=True)
    (where / "o").mkdir()
    (where / "c/case.json").write_text(json.dumps({"type": "offload", **case_body}))
    env = {
        **os.environ,
        "MEMORACE_CASE_DIR": str(where / "c"),
        "MEMORACE_OUT_DIR": str(where / "o"),
    }
    began, cpu = time.monotonic(), _children_cpu()
    subprocess.run(
        [sys.executable, str(ROOT / "reference_solutions" / planner)],
        env=env,
        check=True,
        capture_output=True,
        timeout=600,
    )
    return where / "o/plan.json", (_children_cpu() - cpu, time.monotonic() - began)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def busy(timing, engine: str) -> float:
    """Share of the makespan with a copy on `engine` (copies on one engine never overlap)."""
    spans = sum(end - start for e, _, start, end in timing.copies if e == engine)
    return spans / timing.makespan if timing.makespan else 0.0


def judge_one(case, bound: int, body: dict, planner: str, tmp: Path) -> tuple[float, str]:
    """(score, what to print); the score is 0 for a plan that is not valid."""
    plan_path, (cpu, wall) = run_planner(planner, body, tmp / planner)
    plan = OFFLOAD.parse_plan(plan_path, case)
    v = OFFLOAD.verify(case, plan)
    if v.verdict != Verdict.OK:
        return 0.0, f"{v.verdict.name}: {v.message[:60]}"
    timing = simulate(case, plan)
    link = max(busy(timing, e) for e in ("h2d", "d2h", "nvme_read", "nvme_write"))
    score = OFFLOAD.score(case, bound, v)
    return score, f"{score:.3f} link {100 * link:.0f}% ({cpu:.1f} s [{wall:.1f}])"


def is_v2(body: dict) -> bool:
    return bool(V2_KEYS & set(body)) or any(
        set(t) - {"id", "size", "alignment", "uses"} for t in body["tensors"]
    )


def main(slugs: list[str], strong_limit: float = 15.0) -> None:
    for slug in slugs:
        problem = load_problem(ROOT / "problems" / slug)
        print(f"\n{slug} (version {problem.version})")
        print(f"{'case':44} {'tensors':>7} {'uses':>6} {'bound µs':>9}  naive | greedy | strong")
        totals: dict[tuple[str, str], list[float]] = {}
        for spec in problem.cases:
            case = OFFLOAD.parse_case(spec.path, spec.capacity)
            bound = OFFLOAD.lower_bound(case)
            body = {**json.loads(spec.path.read_text()), "capacity": spec.capacity}
            uses = sum(len(t["uses"]) for t in body["tensors"])
            run = PLANNERS if is_v2(body) else {n: PLANNERS[n] for n in ("naive", "greedy")}
            timed = {**body, "time_limit_s": strong_limit}
            with tempfile.TemporaryDirectory() as tmp:
                done = {
                    n: judge_one(case, bound, timed if n == "strong" else body, p, Path(tmp))
                    for n, p in run.items()
                }
            for n, (score, _) in done.items():
                got = totals.setdefault((n, spec.split), [0.0, 0.0])
                got[0], got[1] = got[0] + spec.weight * score, got[1] + spec.weight
            cells = [text for _, text in done.values()]
            if not is_v2(body):
                cells.append("v1: run tests/test_offload_planners")
            name = f"{spec.split[0]} {spec.name}"
            print(f"{name:44} {len(case):>7} {uses:>6} {bound:>9}  {' | '.join(cells)}")
        for (n, split), (score, weight) in sorted(totals.items()):
            print(f"{n} {split} problem score {100 * score / weight:.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("slugs", nargs="*", default=["train-offload", "infer-offload"])
    parser.add_argument("--strong-limit", type=float, default=15.0, help="seconds per case")
    options = parser.parse_args()
    for slug in options.slugs:
        if not (ROOT / "problems" / slug / "problem.toml").is_file():
            parser.error(f"no problem package problems/{slug}")
    main(options.slugs, options.strong_limit)
