#!/usr/bin/env python3
"""Regenerates the infer-offload package: data/*/*.json and problem.toml, from the
traces in traces/ that PyTorch recorded.

    python problems/infer-offload/generator/generate.py          # standard library only
    python problems/infer-offload/generator/generate.py --record # record the traces again
                                                                 # (the trace extra: PyTorch)

Deterministic: running it again rewrites every file byte for byte. Each trace is a
window of engine steps of a Llama-style server (grouped-query attention, a growing KV
cache, continuous batching), recorded by `memorace trace serve` (tracer/, format:
tracer/TRACE_FORMAT.md) with the arguments below, provenance inside.
problems/_lib/offload_trace.py turns it into an `offload` v2 case, FlexGen-like: the
weights start on the host (on NVMe in the NVMe cases) and the KV cache that outlives
the window must end on the host; the device holds a fraction of weights and cache;
KV blocks may be parked as int8.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_lib"))  # torchtrace, offload_trace

from offload_trace import PCIE4, PCIE5, OffloadTraceCase, Scheme, generator_main

HERE = Path(__file__).resolve().parent
TITLE = "LLM decoding with weights and KV cache offloaded, recorded with PyTorch"
LIMITS = {"time_limit_s": 30.0, "memory_limit_mb": 2048, "cpus": 1, "gpus": 0}
FLEXGEN = Scheme(
    "FlexGen", start={"parameter": "host"}, end={"kv_cache": "host"}, compress=("kv_cache",)
)
FLEXGEN_NVME = Scheme(
    "FlexGen, weights on NVMe",
    start={"parameter": "nvme"},
    end={"kv_cache": "host"},
    compress=("kv_cache",),
)


def serve(steps: int, seqs: int, prompt: int, output: int, seed: int) -> tuple[str, ...]:
    return (
        "serve",
        "--model",
        "llama-1b",
        "--steps",
        str(steps),
        "--max-seqs",
        str(seqs),
        "--prompt-mean",
        str(prompt),
        "--output-mean",
        str(output),
        "--seed",
        str(seed),
    )


C = OffloadTraceCase
# fmt: off
CASES = [
    C("p01-1b-seqs8-p256-pcie5", "public", serve(4, 8, 256, 32, 1), FLEXGEN,
      64, PCIE5, 0.5),
    C("p02-1b-seqs16-p512-pcie4-nvme", "public", serve(4, 16, 512, 64, 2), FLEXGEN_NVME,
      80, PCIE4, 0.4, nvme=True, host_slack=1.5),
    C("p03-1b-seqs4-p1024-pcie5", "public", serve(4, 4, 1024, 16, 3), FLEXGEN,
      64, PCIE5, 0.3),
    C("p04-1b-seqs32-p128-pcie4", "public", serve(4, 32, 128, 64, 4), FLEXGEN,
      80, PCIE4, 0.5),
    C("p05-1b-seqs16-p256-pcie5-nvme", "public", serve(4, 16, 256, 128, 5), FLEXGEN_NVME,
      80, PCIE5, 0.45, nvme=True, host_slack=1.3),
    C("p06-1b-seqs8-p2048-pcie4", "public", serve(3, 8, 2048, 32, 6), FLEXGEN,
      64, PCIE4, 0.6),
    C("h01-1b-seqs16-p1024-pcie5", "hidden", serve(4, 16, 1024, 64, 11), FLEXGEN,
      80, PCIE5, 0.15),
    C("h02-1b-seqs32-p256-pcie4-nvme", "hidden", serve(4, 32, 256, 32, 12), FLEXGEN_NVME,
      96, PCIE4, 0.45, nvme=True, host_slack=1.3),
    C("h03-1b-seqs8-p2048-pcie5", "hidden", serve(3, 8, 2048, 16, 13), FLEXGEN,
      64, PCIE5, 0.35, weight=2.0),
    C("h04-1b-seqs24-p512-pcie4", "hidden", serve(4, 24, 512, 96, 14), FLEXGEN,
      80, PCIE4, 0.5),
    C("h05-1b-seqs12-p768-pcie5-nvme", "hidden", serve(4, 12, 768, 48, 15), FLEXGEN_NVME,
      80, PCIE5, 0.4, nvme=True, host_slack=1.5),
    C("h06-1b-seqs48-p128-pcie5", "hidden", serve(4, 48, 128, 32, 16), FLEXGEN,
      96, PCIE5, 0.3, weight=2.0),
]
# fmt: on


if __name__ == "__main__":
    generator_main(HERE, TITLE, LIMITS, CASES, 1, sys.argv)
