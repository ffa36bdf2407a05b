#!/usr/bin/env python3
"""Regenerates the gpt2-train package (version 2): data/*/*.csv and problem.toml, from
the traces in traces/ that PyTorch recorded.

    python problems/gpt2-train/generator/generate.py          # standard library only
    python problems/gpt2-train/generator/generate.py --record # record the traces again
                                                              # (the trace extra: PyTorch)

Deterministic: running it again rewrites every file byte for byte. Each trace is one
training step of one pipeline stage of GPT-2, recorded by `memorace trace train`
(tracer/, format: tracer/TRACE_FORMAT.md) with the arguments below; each trace holds
its provenance (PyTorch version, model config, command). A case's capacity is 25 %
above its lower bound (problems/_lib/timeline.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_lib"))  # timeline, torchtrace

from torchtrace import TraceCase, offset_main

HERE = Path(__file__).resolve().parent
TITLE = "GPT-2 training step on one pipeline stage, recorded with PyTorch"
LIMITS = {"time_limit_s": 30.0, "memory_limit_mb": 2048, "cpus": 1, "gpus": 0}


def train(
    model: str,
    stages: int,
    stage: int,
    mbs: int,
    batch: int,
    seq: int = 1024,
    ragged: int | None = None,
) -> tuple[str, ...]:
    args = [
        "train",
        "--model",
        f"gpt2-{model}",
        "--stages",
        str(stages),
        "--stage",
        str(stage),
        "--micro-batches",
        str(mbs),
        "--batch",
        str(batch),
        "--seq",
        str(seq),
    ]
    return (*args, *(["--ragged-seed", str(ragged)] if ragged is not None else []))


# Every case keeps a 1F1B steady state (several micro-batches in flight, leaving first-in
# first-out while each one's layers leave last-in first-out): what separates planners.
CASES = [
    TraceCase("p01-small-pp4-mb8x2", "public", train("small", 4, 0, 8, 2)),
    TraceCase("p02-small-pp8-mb16x1", "public", train("small", 8, 0, 16, 1)),
    TraceCase("p03-small-pp2-mb6x2-ragged", "public", train("small", 2, 0, 6, 2, ragged=103)),
    TraceCase("p04-small-pp4-stage1-mb8x4", "public", train("small", 4, 1, 8, 4, ragged=112)),
    TraceCase("p05-medium-pp8-mb16x8-s512", "public", train("medium", 8, 0, 16, 8, 512, 105)),
    TraceCase("h01-small-pp4-mb12x4-ragged", "pool", train("small", 4, 0, 12, 4, ragged=203)),
    TraceCase("h02-small-pp4-last-mb8x1-s512", "pool", train("small", 4, 3, 8, 1, 512)),
    TraceCase("h03-medium-pp8-stage1-mb14x4", "pool", train("medium", 8, 1, 14, 4, ragged=203)),
    TraceCase("h04-small-pp8-mb24x8", "pool", train("small", 8, 0, 24, 8, ragged=205)),
    TraceCase("h05-medium-pp4-stage1-mb8x4", "pool", train("medium", 4, 1, 8, 4, ragged=307)),
    TraceCase(
        "h06-medium-pp4-mb32x4", "pool", train("medium", 4, 0, 32, 4, ragged=209), weight=2.0
    ),
    TraceCase(
        "h07-small-pp8-mb1460x8", "pool", train("small", 8, 0, 1460, 8, ragged=205), weight=2.0
    ),
]

# The hidden split is not in the repository: each installation makes its own from a
# secret seed (`--hidden-seed FILE --out DIR`, api/bootstrap.py), this many cases of
# these weights, each a seeded variation of one of the traces above (public and
# `hidden`-named alike: the pool; problems/_lib/hidden.py).
HIDDEN_WEIGHTS = (1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0)


if __name__ == "__main__":
    offset_main(HERE, TITLE, LIMITS, CASES, HIDDEN_WEIGHTS, sys.argv, skip=())
