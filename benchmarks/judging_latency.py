"""Judging latency and throughput with 1, 2 and 4 worker slots (issue 36).

A real service (API, workers, embedded or PostgreSQL + Redis backend, local sandbox)
judges a 12-case problem whose planner uses its time on every case: `--mode cpu`
spins (this machine's cores: with more slots than cores the cores run out), `--mode
sleep` sleeps (a simulated host with a core per slot). Per slot count it prints a lone
submission's latency, then the latency p50 / p99 of a burst of `--submissions`
submissions (one per team, all at once) and the submissions per hour. With one slot
per judging (`--helpers 0`: the judge before worker.cases) a lone submission waits for
all 12 case times whatever the slots; with helpers (the default, -1: as many as
cases) it waits about ceil(12 / N) case times plus the build.

    .venv/bin/python benchmarks/judging_latency.py [--slots 1,2,4] [--mode sleep|cpu]
        [--submissions 20] [--cases 12] [--case-s 0.5] [--backend embedded|postgres]
        [--helpers -1|0|N]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.service import Service, postgres_database, redis_server, start_service
from tests.test_package import CASE, make_package

SLUG = "tiny"  # tests.test_package.make_package's folder, so its slug
PLAN = (
    "open(os.path.join(os.environ['MEMORACE_OUT_DIR'], 'plan.csv'), 'w')"
    ".write('id,offset\\na,0\\nb,8\\n')\n"
)
USE = {
    "sleep": "time.sleep({s})\n",
    "cpu": "t = time.monotonic()\nwhile time.monotonic() - t < {s}:\n    pass\n",
}


def write_package(root: Path, cases: int, case_s: float, hidden: int = 0) -> Path:
    """A `cases`-case offset problem (tests.test_package's tiny case each) whose time
    limit leaves room for the planner's `case_s`; the last `hidden` cases are hidden
    (they start once every public case is done: worker.cases)."""
    limit = case_s * 2 + 2
    toml = [f'slug = "{SLUG}"', 'name = "Latency"', 'type = "offset"', "version = 1", "",
            "[limits]", f"time_limit_s = {limit}", "memory_limit_mb = 512", ""]  # fmt: skip
    splits = {f"c{k:02d}": "public" if k < cases - hidden else "hidden" for k in range(cases)}
    for name, split in splits.items():
        toml += ["[[cases]]", f'name = "{name}"', f'split = "{split}"', "capacity = 16", ""]
    return make_package(root, "\n".join(toml), {f"{s}/{n}": CASE for n, s in splits.items()})


def latency(service: Service, token: str, planner: Path) -> float:
    start = time.monotonic()
    sub = service.submit(token, SLUG, planner)
    done = service.wait_done(token, sub["id"], timeout=3600)
    assert done["status"] == "done", done.get("status_detail")
    return time.monotonic() - start


def measure(args: argparse.Namespace, slots: int, tmp: Path) -> dict[str, float]:
    planner = tmp / "planner.py"
    planner.write_text("import os, time\n" + USE[args.mode].format(s=args.case_s) + PLAN)
    pkg = write_package(tmp, args.cases, args.case_s, args.hidden)
    # Hidden cases unpaced: the figures are the judging's, not the pacing's (worker.pacing).
    env = {"MEMORACE_RATE_LIMIT": "100000", "MEMORACE_CASE_HELPERS": str(args.helpers),
           "MEMORACE_PACE_HIDDEN": "0"}  # fmt: skip
    if args.mode == "sleep":
        env["MEMORACE_SLOT_CORES"] = "0"  # simulated cores: sleeping planners need none
    with ExitStack() as stack:
        urls = {}
        if args.backend == "postgres":
            urls["database_url"] = stack.enter_context(postgres_database())
            urls["broker_url"] = stack.enter_context(redis_server()).url
        service = start_service(tmp, [pkg], extra_env=env, **urls)
        stack.callback(service.stop)
        for k in range(slots):
            service.start_worker(f"w{k + 1}", beat=k == 0, wait=False)
        service.wait_ready(*(f"w{k + 1}" for k in range(slots)))
        tokens = [service.add_team(f"t{k}", f"u{k}") for k in range(args.submissions)]
        lone = latency(service, tokens[0], planner)
        start = time.monotonic()
        with ThreadPoolExecutor(args.submissions) as pool:
            waits = sorted(pool.map(lambda t: latency(service, t, planner), tokens))
        span = time.monotonic() - start
    p99 = waits[min(len(waits) - 1, math.ceil(0.99 * len(waits)) - 1)]
    return {"lone": lone, "p50": statistics.median(waits), "p99": p99,
            "per_hour": len(waits) / span * 3600}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slots", default="1,2,4")
    parser.add_argument("--mode", choices=sorted(USE), default="sleep")
    parser.add_argument("--submissions", type=int, default=20)
    parser.add_argument("--cases", type=int, default=12)
    parser.add_argument("--case-s", type=float, default=0.5)
    parser.add_argument("--hidden", type=int, default=0, help="of the cases, hidden ones")
    parser.add_argument("--backend", choices=("embedded", "postgres"), default="embedded")
    parser.add_argument("--helpers", type=int, default=-1, help="MEMORACE_CASE_HELPERS")
    args = parser.parse_args()
    print(f"{args.submissions} submissions x {args.cases} cases of {args.case_s} s "
          f"({args.mode}), {args.backend} backend, local sandbox, "
          f"helpers {args.helpers}, {args.hidden} hidden")  # fmt: skip
    print(f"{'slots':>5} {'lone s':>8} {'(cases x t)':>11} {'p50 s':>8} {'p99 s':>8} {'subs/h':>8}")
    for slots in map(int, args.slots.split(",")):
        with tempfile.TemporaryDirectory(prefix="memorace-latency-") as tmp:
            r = measure(args, slots, Path(tmp))
        print(f"{slots:>5} {r['lone']:>8.1f} {r['lone'] / args.case_s:>11.1f} "
              f"{r['p50']:>8.1f} {r['p99']:>8.1f} {r['per_hour']:>8.0f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
