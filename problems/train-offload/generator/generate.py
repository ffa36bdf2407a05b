#!/usr/bin/env python3
"""Regenerates the train-offload package (version 2): data/*/*.json and problem.toml,
from the traces in traces/ that PyTorch recorded.

    python problems/train-offload/generator/generate.py          # standard library only
    python problems/train-offload/generator/generate.py --record # record the traces again
                                                                 # (the trace extra: PyTorch)

Deterministic: running it again rewrites every file byte for byte. Each trace is one
training step of GPT-2 (or one pipeline stage of it), recorded by `memorace trace
train` (tracer/, format: tracer/TRACE_FORMAT.md) with the arguments below, provenance
inside. problems/_lib/offload_trace.py turns it into an `offload` v2 case:
ZeRO-Offload-like (parameters and Adam's state start on the host and end there,
gradients end there), ZeRO-Infinity-like on the NVMe cases (Adam's state starts on
NVMe); activations may be recomputed from their op's inputs or parked as fp8,
gradients as bf16. Version 1 (our own model of a model): generator/v1/.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_lib"))  # torchtrace, offload_trace

from offload_trace import (
    PCIE4,
    PCIE5,
    HiddenSplit,
    OffloadTraceCase,
    Scheme,
    drawn_gpu,
    drawn_link,
    drawn_nvme,
    generator_main,
)

HERE = Path(__file__).resolve().parent
TITLE = "Training step with host and NVMe offload, recorded with PyTorch"
LIMITS = {"time_limit_s": 30.0, "memory_limit_mb": 2048, "cpus": 1, "gpus": 0}
STATE = {"parameter": "host", "optimizer_state": "host", "gradient": "host"}
ZERO = Scheme(
    "ZeRO-Offload",
    start={"parameter": "host", "optimizer_state": "host"},
    end=STATE,
    compress=("activation", "gradient"),
    recompute=True,
    keep=("gradient",),
)
INFINITY = Scheme(
    "ZeRO-Infinity",
    start={"parameter": "host", "optimizer_state": "nvme"},
    end=STATE,
    compress=("activation", "gradient"),
    recompute=True,
    keep=("gradient",),
)


def train(model: str, stages: int, stage: int, mbs: int, batch: int, seq: int) -> tuple[str, ...]:
    return (
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
    )


C = OffloadTraceCase
# fmt: off
CASES = [
    C("p01-small-b2-s512-pcie5", "public", train("small", 1, 0, 1, 2, 512), ZERO, 64, PCIE5, 0.3),
    C("p02-small-mb2x2-s1024-pcie4-nvme", "public", train("small", 1, 0, 2, 2, 1024), INFINITY,
      96, PCIE4, 0.35, nvme=True, host_slack=1.5),
    C("p03-medium-pp4-mb2x4-s512-pcie5", "public", train("medium", 4, 0, 2, 4, 512), ZERO, 80,
      PCIE5, 0.3),
    C("p04-small-pp2-stage1-mb4x4-s512-pcie5", "public", train("small", 2, 1, 4, 4, 512), ZERO,
      96, PCIE5, 0.3),
    C("p05-medium-b4-s1024-pcie4-nvme", "public", train("medium", 1, 0, 1, 4, 1024), INFINITY,
      96, PCIE4, 0.3, nvme=True, host_slack=1.5),
    C("p06-small-mb8x1-s1024-pcie5", "public", train("small", 1, 0, 8, 1, 1024), ZERO, 128, PCIE5,
      0.25),
    C("h01-small-mb4x2-s1024-pcie5-nvme", "pool", train("small", 1, 0, 4, 2, 1024), INFINITY,
      120, PCIE5, 0.2, nvme=True, host_slack=1.5),
    C("h02-medium-pp2-mb2x2-s1024-pcie4", "pool", train("medium", 2, 0, 2, 2, 1024), ZERO, 100,
      PCIE4, 0.3),
    C("h03-medium-pp4-stage1-mb4x2-pcie5-nvme", "pool", train("medium", 4, 1, 4, 2, 1024),
      INFINITY, 100, PCIE5, 0.25, nvme=True, host_slack=1.3, weight=2.0),
    C("h05-small-pp4-stage2-mb6x4-s512-pcie4-nvme", "pool", train("small", 4, 2, 6, 4, 512),
      INFINITY, 100, PCIE4, 0.3, nvme=True, host_slack=1.4),
    C("h06-medium-pp8-mb8x2-s1024-pcie5", "pool", train("medium", 8, 0, 8, 2, 1024), ZERO, 120,
      PCIE5, 0.2, weight=2.0),
    C("h04-small-b8-s1024-pcie4", "pool", train("small", 1, 0, 1, 8, 1024), ZERO, 80, PCIE4,
      0.4),
]
# fmt: on


# The hidden split is not in the repository: each installation makes its own from a
# secret seed (`--hidden-seed FILE --out DIR`, api/bootstrap.py), this many cases of
# these weights, each a seeded variation (problems/_lib/hidden.py) of a trace above
# (public and pool alike) with drawn settings.
HIDDEN_WEIGHTS = (1.0, 1.0, 2.0, 1.0, 2.0, 1.0)


def draw_settings(base: OffloadTraceCase, draw) -> OffloadTraceCase:
    """ZeRO-Offload or (half the time) ZeRO-Infinity on NVMe, 64 to 128 steps, 20 to
    40 % of the way to holding everything, drawn link, NVMe and GPU speeds."""
    nvme = draw.below(2) == 1
    return replace(
        base,
        scheme=INFINITY if nvme else ZERO,
        n_steps=draw.between(64, 128),
        link=drawn_link(draw),
        share=draw.between(20, 40) / 100,
        nvme=drawn_nvme(draw) if nvme else False,
        host_slack=draw.between(125, 160) / 100 if nvme else None,
        gpu=drawn_gpu(draw),
    )


if __name__ == "__main__":
    hidden = HiddenSplit(HIDDEN_WEIGHTS, draw_settings)
    generator_main(HERE, TITLE, LIMITS, CASES, 2, sys.argv, hidden)
