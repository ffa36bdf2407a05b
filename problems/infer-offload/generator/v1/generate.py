#!/usr/bin/env python3
"""Version 1 of the infer-offload package, kept so that version 1's results stay
reproducible (the shipped package is version 2, made by ../generate.py):

    python problems/infer-offload/generator/v1/generate.py --out DIR  # standard library only

writes version 1's data/*/*.json and problem.toml into DIR from the traces in
v1/traces/. Version 1's windows admit about one request per engine step (the
recorder's default arrival rate), so every case is link-bound (the strong plan keeps
the link busy 88-99 % of its makespan); note that some traces' provenance records a
different --seed than the arguments below: the traces, not the arguments, are the data.

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

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "_lib"))  # torchtrace, offload_trace

from offload_trace import PCIE4, PCIE5, OffloadTraceCase, Scheme, write_offload_package
from torchtrace import read_trace, trace_path

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
    if len(sys.argv) != 3 or sys.argv[1] != "--out":
        sys.exit("usage: generate.py --out DIR")
    write_offload_package(
        Path(sys.argv[2]),
        TITLE,
        LIMITS,
        CASES,
        1,
        lambda case: read_trace(trace_path(HERE, case)),
        slug="infer-offload",
    )
