#!/usr/bin/env python3
"""Regenerates the infer-offload package (version 2): data/*/*.json and problem.toml,
from the traces in traces/ that PyTorch recorded.

    python problems/infer-offload/generator/generate.py          # standard library only
    python problems/infer-offload/generator/generate.py --record # record the traces again
                                                                 # (the trace extra: PyTorch)

Deterministic: running it again rewrites every file byte for byte. Each trace is a
window of three engine steps of a Llama-style server (grouped-query attention, a
growing KV cache, continuous batching), recorded by `memorace trace serve` (tracer/,
format: tracer/TRACE_FORMAT.md) with the arguments below, provenance inside.
problems/_lib/offload_trace.py turns it into an `offload` v2 case, FlexGen-like: the
weights start on the host and the KV cache that outlives the window must end there;
the device holds a fraction of weights and cache, never all the weights; KV blocks
may be parked 4-bit. Version 1 (generator/v1) admitted about one request per step:
every pass was a decode that streamed the weights, link-bound by nature.

The load follows the compute/transfer balance (`arrivals`): a prompt token costs
about 2 FLOPs per weight, as many FLOPs as the bf16 weights have bytes, so prefilling
RIDGE = FLOPS / link bandwidth tokens takes as long as streaming the weights once
over the link. Requests arrive at RIDGE prompt tokens per engine step (Poisson, mean
prompt `prompt`, capped by the recorder at half the 4096-token context), with a seat
for every request the window can hold; the rest of each pass is decode.
"""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_lib"))  # torchtrace, offload_trace

from offload_trace import (
    H100_SXM,
    PCIE4,
    PCIE5,
    HiddenSplit,
    Link,
    OffloadTraceCase,
    Scheme,
    drawn_gpu,
    drawn_link,
    generator_main,
)

HERE = Path(__file__).resolve().parent
TITLE = "LLM decoding with weights and KV cache offloaded, recorded with PyTorch"
LIMITS = {"time_limit_s": 30.0, "memory_limit_mb": 2048, "cpus": 1, "gpus": 0}
FLEXGEN = Scheme(
    "FlexGen", start={"parameter": "host"}, end={"kv_cache": "host"}, compress=("kv_cache",)
)
STEPS = 3  # engine steps (forward passes) in a window
PROMPT_CAP = 2048  # the recorder's cap on a prompt: half of max_context (4096)


def arrivals(link: Link, prompt: int) -> float:
    """Mean requests per engine step whose prompts (mean of an exponential capped at
    PROMPT_CAP) take as long to prefill as streaming the weights once over `link`."""
    ridge = H100_SXM.flops_per_us / link.bandwidth  # prompt tokens per weight pass
    mean = prompt * (1 - math.exp(-PROMPT_CAP / prompt))
    return round(ridge / mean, 1)


def serve(link: Link, prompt: int, output: int, seed: int) -> tuple[str, ...]:
    rate = arrivals(link, prompt)
    seats = 8 * math.ceil((STEPS + 1) * rate / 8)  # every arrival of the window, about
    return (
        "serve",
        "--model",
        "llama-1b",
        "--steps",
        str(STEPS),
        "--max-seqs",
        str(seats),
        "--arrivals",
        str(rate),
        "--prompt-mean",
        str(prompt),
        "--output-mean",
        str(output),
        "--seed",
        str(seed),
    )


def case(name: str, split: str, link: Link, prompt: int, output: int, seed: int, n_steps: int,
         share: float, weight: float = 1.0) -> OffloadTraceCase:  # fmt: skip
    return OffloadTraceCase(
        name, split, serve(link, prompt, output, seed), FLEXGEN, n_steps, link, share,
        weight=weight, below="parameter",
    )  # fmt: skip


# fmt: off
CASES = [
    case("p01-1b-p512-pcie5", "public", PCIE5, 512, 32, 1, 64, 0.5),
    case("p02-1b-p1024-pcie4", "public", PCIE4, 1024, 64, 2, 80, 0.4),
    case("p03-1b-p2048-pcie5", "public", PCIE5, 2048, 16, 3, 64, 0.3),
    case("p04-1b-p768-pcie5", "public", PCIE5, 768, 32, 4, 80, 0.5),
    case("p05-1b-p1536-pcie5", "public", PCIE5, 1536, 128, 5, 80, 0.45),
    case("p06-1b-p1536-pcie5", "public", PCIE5, 1536, 32, 6, 64, 0.6),
    case("h01-1b-p1024-pcie5", "pool", PCIE5, 1024, 64, 11, 80, 0.2),
    case("h02-1b-p1024-pcie5", "pool", PCIE5, 1024, 32, 12, 96, 0.45),
    case("h03-1b-p2048-pcie5", "pool", PCIE5, 2048, 16, 13, 64, 0.35, weight=2.0),
    case("h04-1b-p768-pcie5", "pool", PCIE5, 768, 96, 14, 80, 0.5),
    case("h05-1b-p1024-pcie4", "pool", PCIE4, 1024, 48, 15, 80, 0.4),
    case("h06-1b-p512-pcie5", "pool", PCIE5, 512, 32, 16, 96, 0.3, weight=2.0),
]
# fmt: on


# The hidden split is not in the repository: each installation makes its own from a
# secret seed (`--hidden-seed FILE --out DIR`, api/bootstrap.py), this many cases of
# these weights, each a seeded variation (problems/_lib/hidden.py) of a trace above
# (public and pool alike) with drawn settings.
HIDDEN_WEIGHTS = (1.0, 1.0, 2.0, 1.0, 1.0, 2.0)


def draw_settings(base: OffloadTraceCase, draw) -> OffloadTraceCase:
    """64 to 96 steps, 20 to 60 % of the way to holding the weights, drawn link and
    GPU speeds."""
    return replace(
        base,
        n_steps=draw.between(64, 96),
        link=drawn_link(draw),
        share=draw.between(20, 60) / 100,
        gpu=drawn_gpu(draw),
    )


def unbalanced(body: dict) -> str | None:
    """The family's balance: a window's compute within 0.75x to 2x of streaming the
    weights once per engine step over the case's link."""
    weights = sum(t["size"] for t in body["tensors"] if t["id"].startswith("parameter."))
    stream = STEPS * weights / body["h2d_bandwidth"]
    if not 0.75 * stream <= sum(body["steps"]) <= 2 * stream:
        return "compute and streaming the weights out of balance"
    return None


if __name__ == "__main__":
    hidden = HiddenSplit(HIDDEN_WEIGHTS, draw_settings, unbalanced)
    generator_main(HERE, TITLE, LIMITS, CASES, 2, sys.argv, hidden)
