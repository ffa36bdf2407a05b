"""Where an allocator's peak is set: the request (its hints) and when, for chosen cases.

python benchmarks/online_lab/mpc_where.py --cases seed4/h04 cold_variants:Ties
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import CALIBRATION_SEED, cases, packages
from online_greedy import Greedy

from judge.types.offset.verifier import lower_bound
from judge.types.online.case import case_events, read_case


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("allocators", nargs="+")
    ap.add_argument("--cases", default="")
    ap.add_argument("--pkg-dir", type=Path, default=Path("/tmp/mpc_pkg"))
    a = ap.parse_args()
    seeds = [CALIBRATION_SEED, *[(b"online lab seed %d" % k).hex() for k in range(1, 12)]]
    makers = {"greedy": Greedy}
    for spec in a.allocators:
        mod, cls = spec.split(":")
        makers[spec] = getattr(importlib.import_module(mod), cls)
    want = [w for w in a.cases.split(",") if w]
    for k, package in enumerate(packages("online-serve", a.pkg_dir, seeds)):
        for name, capacity, path in cases(package, "public" if k == 0 else "hidden"):
            label = f"{'public' if k == 0 else f'seed{k - 1}'}/{name}"
            if want and not any(label.startswith(w) for w in want):
                continue
            case = read_case(path, capacity)
            names, events = list(case.hint_names), list(case_events(case))
            bound = lower_bound(case)
            print(f"{label} bound {bound / 1e6:.2f} MB floor {(capacity - 2**21) / 1.6e6:.2f}")
            for key, make in makers.items():
                pol, peak, at, hist = make(capacity, names), 0, None, []
                for i, e in enumerate(events):
                    if e[0] == "a":
                        end = pol.alloc(e[1], e[2], e[3], e[4]) + e[2]
                        if end > peak:
                            peak, at = end, (i, e[2], " ".join(e[4]))
                            hist.append((end, at))
                    else:
                        pol.free(e[1])
                rises = " ; ".join(f"{p / 1e6:.1f}@{h[2]}" for p, h in hist[-4:])
                print(f"  {key.split(':')[-1]:10s} {bound / peak:.4f} peak {peak / 1e6:.2f} "
                      f"last rises: {rises}")  # fmt: skip


if __name__ == "__main__":
    main()
