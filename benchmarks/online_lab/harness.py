"""In-process harness for online allocators (no judge, no subprocess): feeds each case's
events to allocator classes and prints lower bound / peak per case, the mean, and the
cases where a class is not above greedy (the issue-35 criterion for strong).

Cases: the problem's (`--problem`, default online-serve) public split and hidden-like
splits made by its generator with the calibration seed (benchmarks/online_calibration.py's)
and extra seeds, into PKG_DIR (made once, reused). Capacities come from each package's
problem.toml. A few seconds per allocator for 26 cases (the judge takes minutes).

    python benchmarks/online_lab/harness.py [--problem SLUG] [--seeds N] [--pkg-dir DIR] \
        MODULE:CLASS...

Build placer first for the strong allocator's own speed (cd reference_solutions/online_strong
&& g++ -O2 -std=c++20 -o placer placer.cpp; untracked): without it place.py's numpy twin
plans. MODULE is imported with reference_solutions/ and reference_solutions/online_strong/ on
the path, e.g. online_greedy:Greedy main:Strong layer_plans:LayerPlans.
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STRONG = ROOT / "reference_solutions" / "online_strong"
sys.path[:0] = [str(Path(__file__).resolve().parent), str(ROOT / "benchmarks"), str(STRONG),
                str(ROOT / "reference_solutions")]  # fmt: skip
from online_calibration import CALIBRATION_SEED  # noqa: E402

from judge.types.offset.verifier import lower_bound  # noqa: E402
from judge.types.online.case import Event, case_events, read_case  # noqa: E402


def peak_of(make, capacity: int, names: list[str], events: list[Event]) -> int:
    policy, peak = make(capacity, names), 0
    for e in events:
        if e[0] == "a":
            peak = max(peak, policy.alloc(e[1], e[2], e[3], e[4]) + e[2])
        else:
            policy.free(e[1])
    return peak


def packages(slug: str, pkg_dir: Path, seeds: list[str]) -> list[Path]:
    """The public package, then one hidden-like package per seed (generated once)."""
    out = [ROOT / "problems" / slug]
    gen = ROOT / "problems" / slug / "generator" / "generate.py"
    for k, seed in enumerate(seeds):
        where = pkg_dir / f"seed{k}"
        if not (where / "problem.toml").is_file():
            pkg_dir.mkdir(parents=True, exist_ok=True)
            hex_file = pkg_dir / f"seed{k}.hex"
            hex_file.write_text(seed + "\n")
            subprocess.run([sys.executable, str(gen), "--hidden-seed", str(hex_file),
                            "--out", str(where)], check=True)  # fmt: skip
        out.append(where)
    return out


def cases(package: Path, split: str) -> list[tuple[str, int, Path]]:
    doc = tomllib.loads((package / "problem.toml").read_text())
    return [(c["name"], c["capacity"], package / "data" / split / f"{c['name']}.events")
            for c in doc["cases"] if c["split"] == split]  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("allocators", nargs="+")
    ap.add_argument("--seeds", type=int, default=3, help="hidden-like splits (1st: calibration)")
    ap.add_argument("--problem", default="online-serve", help="online-serve or online-train")
    ap.add_argument("--pkg-dir", type=Path, help="default /tmp/online_lab/SLUG")
    a = ap.parse_args()
    pkg_dir = a.pkg_dir or Path("/tmp/online_lab") / a.problem
    extra = [(b"online lab seed %d" % k).hex() for k in range(1, a.seeds)]
    seeds = [CALIBRATION_SEED, *extra]
    makers = {"greedy": importlib.import_module("online_greedy").Greedy}
    for spec in a.allocators:
        mod, cls = spec.split(":")
        makers[spec] = getattr(importlib.import_module(mod), cls)
    scores: dict[str, list[float]] = {k: [] for k in makers}
    labels: list[str] = []
    print(f"{'case':36s}" + "".join(f"{k[-18:]:>20s}" for k in makers))
    for k, package in enumerate(packages(a.problem, pkg_dir, seeds[: a.seeds])):
        for name, capacity, path in cases(package, "public" if k == 0 else "hidden"):
            case = read_case(path, capacity)  # the judge's reader and bound
            names, events = list(case.hint_names), list(case_events(case))
            bound, cells = lower_bound(case), ""
            for key, make in makers.items():
                began = time.perf_counter()
                scores[key].append(bound / peak_of(make, capacity, names, events))
                cells += f"{scores[key][-1]:13.4f} ({time.perf_counter() - began:4.1f}s)"
            labels.append(f"{'public' if k == 0 else f'seed{k - 1}'}/{name}")
            print(f"{labels[-1][:36]:36s}{cells}", flush=True)
    greedy = scores["greedy"]
    print(f"greedy: mean {sum(greedy) / len(greedy):.4f}")
    for key, got in list(scores.items())[1:]:
        low = [f"{n}:{s - g:+.4f}" for n, s, g in zip(labels, got, greedy, strict=True) if s <= g]
        mean = sum(got) / len(got)
        print(f"{key}: mean {mean:.4f}; not above greedy on {len(low)}: {' '.join(low)}")


if __name__ == "__main__":
    main()
