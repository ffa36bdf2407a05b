"""What keeping KV caches apart from the temporaries could reach on online-serve, at best
(an analysis, not an allocator). Per case it prints greedy's score and two idealized
layouts' lower bound / peak:

- `sticky`: the caches packed in one region as large as the most cache bytes live so
  far, the temporaries packed above it: peak = max over time of (most caches so far +
  temporaries now). A cache region that never shrinks.
- `step`: the same, but the region is as large as the most cache bytes live in the
  current engine step only (every cache is replaced by `cat` once a step, so a conveyor
  could shrink it at each step): peak = max over time of (most caches in this step +
  temporaries now).
- `grow`: the region starts each step at the cache bytes live when the step begins and
  grows with them within the step (never shrinks inside it): peak = max over time of
  (most caches so far in this step + temporaries now).

Both ignore what a real layout loses: holes among the caches (a cache grown by a token
does not fit where its predecessor was), the slack a conveyor needs (about two caches
plus a step's growth), holes among the temporaries, and the first step's caches, which
arrive request by request.

    python benchmarks/online_lab/ideal_split.py [--seeds N]

Cases as harness.py makes them (the public split, then one hidden-like split per seed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness: then reference_solutions/
from harness import CALIBRATION_SEED, cases, packages
from online_greedy import Greedy

from judge.types.offset.verifier import lower_bound
from judge.types.online.case import case_events, read_case


def ideals(names: list[str], events: list, capacity: int) -> tuple[int, int, int, int]:
    """(greedy's peak, sticky peak, step peak, grow peak)."""
    cat_ix, step_ix = names.index("category"), names.index("step")
    greedy, g_peak = Greedy(capacity, names), 0
    kv = temp = kv_most = sticky = 0
    step, step_kv, temps = "-", {}, []
    run_kv = grow = 0
    size: dict[str, tuple[int, bool]] = {}
    for e in events:
        if e[0] == "a":
            is_kv = e[4][cat_ix] == "kv_cache"
            if e[4][step_ix] not in ("-", step):
                step, run_kv = e[4][step_ix], kv
            size[e[1]] = (e[2], is_kv)
            if is_kv:
                kv += e[2]
                kv_most = max(kv_most, kv)
                run_kv = max(run_kv, kv)
            else:
                temp += e[2]
            sticky = max(sticky, kv_most + temp)
            grow = max(grow, run_kv + temp)
            step_kv[step] = max(step_kv.get(step, 0), kv)
            temps.append((step, temp))
            g_peak = max(g_peak, greedy.alloc(e[1], e[2], e[3], e[4]) + e[2])
        else:
            n, is_kv = size.pop(e[1])
            greedy.free(e[1])
            kv, temp = (kv - n, temp) if is_kv else (kv, temp - n)
    return g_peak, sticky, max(step_kv[s] + t for s, t in temps), grow


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=6)
    a = ap.parse_args()
    seeds = [CALIBRATION_SEED, *[(b"online lab seed %d" % k).hex() for k in range(1, a.seeds)]]
    pkg_dir = Path("/tmp/online_lab") / "online-serve"
    worse = {"sticky": [], "step": [], "grow": []}
    margins = []
    for k, package in enumerate(packages("online-serve", pkg_dir, seeds)):
        for name, capacity, path in cases(package, "public" if k == 0 else "hidden"):
            case = read_case(path, capacity)
            bound = lower_bound(case)
            g, sticky, step, grow = ideals(list(case.hint_names), list(case_events(case)), capacity)
            label = f"{'public' if k == 0 else f'seed{k - 1}'}/{name}"
            print(f"{label:32s} greedy {bound / g:.4f} sticky {bound / sticky:.4f} "
                  f"step {bound / step:.4f} grow {bound / grow:.4f}")  # fmt: skip
            worse["sticky"] += [label] if sticky >= g else []
            worse["step"] += [label] if step >= g else []
            worse["grow"] += [label] if grow >= g else []
            margins.append((bound / step - bound / g, label))
    for key, got in worse.items():
        print(f"{key}: not above greedy on {len(got)}: {' '.join(got)}")
    print("step: smallest margins over greedy:", sorted(margins)[:5])


if __name__ == "__main__":
    main()
