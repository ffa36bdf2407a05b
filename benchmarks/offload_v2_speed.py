"""Benchmark: the `offload` exact verifier (static rules + simulation) on a synthetic v2
plan of about 20,000 residencies that uses every feature (target: 100 ms).

    python benchmarks/offload_v2_speed.py [--tensors 5000] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judge.types.offload.case import parse_case  # noqa: E402
from judge.types.offload.plan import parse_plan  # noqa: E402
from judge.types.offload.rules import check  # noqa: E402
from judge.types.offload.simulate import simulate  # noqa: E402
from judge.types.offload.verifier import verify  # noqa: E402


def synthetic(n: int, seed: int = 1) -> tuple[dict[str, Any], dict[str, Any]]:
    """n tensors of 4 uses each, 4 residencies each; tensors share byte regions in
    pairs with disjoint lifetimes, so bytes are reused across tensors too."""
    rng = random.Random(seed)
    n_steps = 2 * n + 8
    tensors, entries, top = [], [], 0
    for i in range(n):
        base = 2 * (i // 2) if i % 2 == 0 else 2 * (i // 2) + n + 4
        uses = [base, base + 1, base + 2, base + 3]
        size = rng.choice([256, 512, 1024]) * 4
        t: dict[str, Any] = {"id": f"t{i}", "size": size, "alignment": 256, "uses": uses}
        kind = i % 5
        res = [{"offset": top, "uses": 1}]
        if kind == 1:  # weights: on the host, read only, back to the host
            t.update(start="host", end="host", writes=[])
            res = [{"offset": top, "uses": 1, "prefetch_after": base - 1, "out": "drop"}]
        elif kind == 2:
            t.update(start="nvme", end="host", writes=[uses[-1]])
            res = [{"offset": top, "uses": 1, "prefetch_after": base - 1, "out": "nvme"}]
        elif kind == 3:
            t["compress"] = {"size": size // 4, "encode": 1, "decode": 1}
            res[0]["out"] = "compressed"
        elif kind == 4:
            t.update(writes=uses[:1], recompute={"cost": 2, "from": []})
            res[0]["out"] = "drop"
        for k in range(1, 4):
            r: dict[str, Any] = {"offset": top, "uses": 1, "priority": k % 2}
            if kind == 4:
                r.update({"in": "recompute", "recompute_before": uses[k]})
                if k < 3:
                    r["out"] = "drop"
            else:
                r["prefetch_after"] = uses[k - 1]
                if kind == 3 and k < 3:
                    r["out"] = "compressed"
                elif kind in (1,) and k < 3:
                    r["out"] = "drop"
                elif kind == 2 and k < 3:
                    r["out"] = "nvme"
            res.append(r)
        if i % 2 == 1:
            top += 4096
        tensors.append(t)
        entries.append({"id": t["id"], "residencies": res})
    case = {
        "capacity": top + 4096, "h2d_bandwidth": 64000, "d2h_bandwidth": 48000,
        "h2d_latency": 2, "d2h_latency": 2, "host_capacity": 2**40,
        "nvme": {"read_bandwidth": 6000, "write_bandwidth": 3000, "read_latency": 10,
                 "write_latency": 10},
        "steps": [rng.randint(0, 40) for _ in range(n_steps)], "tensors": tensors,
    }  # fmt: skip
    return case, {"tensors": entries}


def best_of(runs: int, fn, clock=time.perf_counter) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(runs):
        start = clock()
        fn()
        times.append(clock() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tensors", type=int, default=5000)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    case_raw, plan_raw = synthetic(args.tensors)
    case = parse_case(case_raw, "case", None)
    plan = parse_plan(plan_raw, "plan", case)
    result = verify(case, plan)
    assert result.verdict == "OK", result.message
    _, lay = check(case, plan)
    print(f"{len(case)} tensors, {len(case.steps)} steps, {len(plan)} residencies")
    rows = [
        ("parse case (JSON already loaded)", best_of(3, lambda: parse_case(case_raw, "c", None))),
        ("parse plan", best_of(3, lambda: parse_plan(plan_raw, "p", case))),
        ("static rules", best_of(3, lambda: check(case, plan))),
        ("simulation", best_of(3, lambda: simulate(case, plan, lay))),
        ("exact verify (rules + simulation)", best_of(3, lambda: verify(case, plan))),
    ]
    for label, seconds in rows:
        print(f"  {label:40} {seconds * 1000:8.1f} ms {len(plan) / seconds:12,.0f} residencies/s")
    cpu = best_of(5, lambda: verify(case, plan), time.process_time)
    print(
        f"  exact verify, best CPU time of 5: {cpu * 1000:.1f} ms (target 100 ms); "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    if args.profile:
        cProfile.runctx("verify(case, plan)", globals(), locals(), "/tmp/offload_v2.prof")
        pstats.Stats("/tmp/offload_v2.prof").sort_stats("cumulative").print_stats(18)


if __name__ == "__main__":
    main()
