#!/usr/bin/env python3
"""Regenerates the gpt2-train package: data/*/*.csv and problem.toml.

    python problems/gpt2-train/generator/generate.py

Seeded and deterministic (Python 3.11, standard library only): running it
again rewrites every file byte for byte. Each case is one training step of a
GPT-2 model on one pipeline stage (see gpt2.py); its capacity is 25 % above
its lower bound
(see problems/_lib/timeline.py).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_lib"))  # timeline.py

from gpt2 import GPT2_MEDIUM, GPT2_SMALL, GPT2_XL, Case, Step
from timeline import write_package

PACKAGE = Path(__file__).resolve().parent.parent

TITLE = "GPT-2 training step on one pipeline stage"
LIMITS = {"time_limit_s": 30.0, "memory_limit_mb": 2048, "cpus": 1, "gpus": 0}

S, M, XL = GPT2_SMALL, GPT2_MEDIUM, GPT2_XL

# name, split, seed, model, stages, stage, micro-batches, micro-batch size, seq len, options.
# Every case keeps a 1F1B-like steady state (several micro-batches in flight,
# dying first-in first-out): that is what separates good planners from greedy
# ones. Micro-batches stay near twice the in-flight count where the size allows
# it, which keeps the naive planner (and so the capacity) within about 2-3x the
# lower bound; only the large cases need many micro-batches. Seeds (they draw
# the ragged sequence lengths) are the first tried, except p04 (the second)
# and h03 (the third), taken so that greedy-by-size ends >= 3 % above the bound.
CASES = [
    Case("p01-small-pp4-mb8x2-flash", "public", 101, S, 4, 0, 8, 2, 1024, attention="flash"),
    Case("p02-small-pp8-mb16x1-eager", "public", 102, S, 8, 0, 16, 1, 1024, ragged=False,
         grad_buffer="persistent"),
    Case("p03-small-pp2-mb6x2-flash", "public", 103, S, 2, 0, 6, 2, 1024, attention="flash",
         ragged=False, grad_buffer="persistent"),
    Case("p04-small-pp4-zb-selective", "public", 1104, S, 4, 0, 8, 4, 1024, schedule="zb",
         attention="flash", recompute="selective"),
    Case("p05-medium-pp8-mb16x8-s512", "public", 105, M, 8, 0, 16, 8, 512, attention="flash"),
    Case("h01-small-pp4-mb12x4-flash", "hidden", 201, S, 4, 0, 12, 4, 1024, attention="flash"),
    Case("h02-small-pp4-mb8x1-s512-eager", "hidden", 202, S, 4, 0, 8, 1, 512, ragged=False,
         grad_buffer="persistent"),
    Case("h03-medium-pp8-stage1-flash", "hidden", 2203, M, 8, 1, 14, 4, 1024, attention="flash"),
    Case("h04-small-pp8-mb24x8-flash", "hidden", 204, S, 8, 0, 24, 8, 1024, attention="flash",
         grad_buffer="persistent"),
    Case("h05-medium-pp4-stage2-zb-selective", "hidden", 205, M, 4, 2, 6, 8, 1024, schedule="zb",
         attention="flash", recompute="selective", grad_buffer="persistent"),
    Case("h06-medium-pp4-mb32x4-zb", "hidden", 206, M, 4, 0, 32, 4, 1024, schedule="zb",
         attention="flash", weight=2.0),
    Case("h07-xl-pp8-mb344x4-flash", "hidden", 207, XL, 8, 0, 344, 4, 1024, attention="flash",
         grad_buffer="persistent", weight=2.0),
]


def main(only: set[str] | None = None) -> None:
    write_package(PACKAGE, TITLE, LIMITS, CASES, lambda case: Step(case).run().buffers, only)


if __name__ == "__main__":
    main(set(sys.argv[1:]) or None)
