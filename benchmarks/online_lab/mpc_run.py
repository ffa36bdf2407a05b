"""Runs allocators over chosen harness cases (a subset), with timing and MPC counters.

python benchmarks/online_lab/mpc_run.py --cases seed1/h05,public/p01 MODULE:CLASS...
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import CALIBRATION_SEED, cases, packages
from online_greedy import Greedy

from judge.types.offset.verifier import lower_bound
from judge.types.online.case import case_events, read_case


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("allocators", nargs="+")
    ap.add_argument("--seeds", type=int, default=12)
    ap.add_argument("--cases", default="", help="comma list of labels (prefix match)")
    ap.add_argument("--pkg-dir", type=Path, default=Path("/tmp/mpc_pkg"))
    a = ap.parse_args()
    extra = [(b"online lab seed %d" % k).hex() for k in range(1, a.seeds)]
    seeds = [CALIBRATION_SEED, *extra]
    makers = {"greedy": Greedy}
    for spec in a.allocators:
        mod, cls = spec.split(":")
        makers[spec] = getattr(importlib.import_module(mod), cls)
    want = [w for w in a.cases.split(",") if w]
    for k, package in enumerate(packages("online-serve", a.pkg_dir, seeds[: a.seeds])):
        for name, capacity, path in cases(package, "public" if k == 0 else "hidden"):
            label = f"{'public' if k == 0 else f'seed{k - 1}'}/{name}"
            if want and not any(label.startswith(w) for w in want):
                continue
            case = read_case(path, capacity)
            names, events = list(case.hint_names), list(case_events(case))
            bound = lower_bound(case)
            row = []
            for key, make in makers.items():
                began = time.perf_counter()
                pol, peak = make(capacity, names), 0
                for e in events:
                    if e[0] == "a":
                        peak = max(peak, pol.alloc(e[1], e[2], e[3], e[4]) + e[2])
                    else:
                        pol.free(e[1])
                extra_s = ""
                if hasattr(pol, "rollouts"):
                    extra_s = f" r{pol.rollouts} d{pol.decisions} c{pol.changed}"
                row.append(f"{key.split(':')[-1]} {bound / peak:.4f} "
                           f"({time.perf_counter() - began:.1f}s{extra_s})")  # fmt: skip
            print(f"{label:20s} " + " | ".join(row), flush=True)


if __name__ == "__main__":
    main()
