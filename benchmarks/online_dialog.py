"""Benchmark: the judge's side of the `online` protocol. A trivial C++ allocator (a bump
pointer, tests/online_cases.BUMP_CPP) answers a 1,000,000-event case (500,000
requests, 500,000 frees) in each sandbox; prints events per second of the whole run
(start to exit) and the µs per request the judge reports. Targets (issue 35): 200,000
events/s in the local sandbox, 100,000 in docker. Asserts nothing about time.

    python benchmarks/online_dialog.py [--events 1000000] [--sandbox local docker]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from judge.package import load_problem
from judge.pipeline import judge_planner
from tests.online_cases import BUMP_CPP, make_package


def trace(events: int) -> str:
    """Requests and frees interleaved, at most 64 live, hints of a training step."""
    rng = random.Random(35)
    lines = ["hints category layer"]
    live: list[int] = []
    for n in range(events // 2):
        lines.append(f"a t{n} {rng.choice((512, 4096, 1 << 20))} 512 activation {n % 48}")
        live.append(n)
        if len(live) > 32 or rng.random() < 0.5:
            lines.append(f"f t{live.pop(rng.randrange(len(live)))}")
    lines += [f"f t{n}" for n in live]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--sandbox", nargs="+", default=["local", "docker"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        pkg = make_package(root, {"big": trace(args.events)}, capacity=2**62, time_limit_s=120)
        source = root / "bump.cpp"
        source.write_text(BUMP_CPP)
        problem = load_problem(pkg)
        print(f"{args.events:,} events, load average {os.getloadavg()[0]:.2f}")
        for box in args.sandbox:
            start = time.monotonic()
            report = judge_planner(problem, source, sandbox=box, build_cache=None)
            wall = time.monotonic() - start
            (r,) = report.results
            rate = args.events / r.time_s if r.time_s else float("nan")
            print(
                f"{box:7s} {r.verdict}: run {r.time_s:.2f} s = {rate:,.0f} events/s; "
                f"µs/request mean {r.request_us_mean} p99 {r.request_us_p99}; "
                f"judging {wall:.1f} s (build, script, verification included)"
            )


if __name__ == "__main__":
    main()
