#!/usr/bin/env python3
"""Regenerates the llama-infer package: data/*/*.csv and problem.toml.

    python problems/llama-infer/generator/generate.py

Seeded and deterministic (Python 3.11, standard library only): running it
again rewrites every file byte for byte. Each case is a window of engine
steps of a Llama-7B server on one GPU (see llama.py); its capacity is 25 % above
its lower bound
(see problems/_lib/timeline.py).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_lib"))  # timeline.py

from llama import LLAMA_7B, Case, Engine
from timeline import write_package

PACKAGE = Path(__file__).resolve().parent.parent

TITLE = "Llama-7B serving with continuous batching"
LIMITS = {"time_limit_s": 30.0, "memory_limit_mb": 2048, "cpus": 1, "gpus": 0}

L7 = LLAMA_7B

# Three ways to keep the KV cache, as real engines do:
#  paged     fixed-size blocks handed out as the context grows (vLLM, TensorRT-LLM)
#  reserved  one contiguous buffer per request and layer, sized for the prompt
#            plus the longest allowed output at admission (FasterTransformer,
#            static caches)
#  growing   one contiguous buffer per request and layer, reallocated a step
#            larger when it fills up (dynamic caches)
# Every case must separate planners: greedy-by-size has to end at least 3 %
# above the lower bound while a better planner gets close to it. The workload
# is what makes that happen (saturated admission keeps the arena nearly full,
# requests of random lengths come and go, short answers to long prompts churn
# the cache), not the seed: the first seed tried passed for every case but
# p05, whose seed is the fifth tried.
CASES = [
    Case("p01-paged128-pp8-first", "public", 1101, L7, 4, stage="first", block_tokens=128,
         kv_blocks=256, max_seqs=64, prompt_mean=1000, output_mean=60, arrivals=3.0,
         token_budget=2048, steps=120),
    Case("p02-reserved-pp4-middle", "public", 1102, L7, 8, stage="middle", kv_layout="reserved",
         kv_blocks=1024, max_seqs=64, prompt_mean=500, output_mean=150, token_budget=4096,
         steps=100),
    Case("p03-growing-pp8-first", "public", 1103, L7, 4, stage="first", kv_layout="growing",
         block_tokens=128, kv_blocks=256, max_seqs=64, prompt_mean=1000, output_mean=150,
         arrivals=3.0, steps=60),
    Case("p04-paged64-tp2-pp8-last", "public", 1104, L7, 4, stage="last", tp=2, block_tokens=64,
         kv_blocks=512, max_seqs=64, prompt_mean=1000, output_mean=60, arrivals=3.0,
         token_budget=2048, steps=120),
    Case("p05-growing-v0-pp16", "public", 5105, L7, 2, stage="middle", kv_layout="growing",
         block_tokens=128, kv_blocks=256, max_seqs=64, prompt_mean=500, output_mean=300,
         token_budget=4096, chunked=False, steps=120),
    Case("h01-reserved-tp4-pp4", "hidden", 1201, L7, 8, stage="first", tp=4, kv_layout="reserved",
         kv_blocks=2048, max_seqs=64, prompt_mean=600, output_mean=150, arrivals=1.0,
         token_budget=4096, steps=120),
    Case("h02-growing2x-pp8-middle", "hidden", 1202, L7, 4, stage="middle", kv_layout="growing",
         block_tokens=64, growth=2.0, kv_blocks=512, max_seqs=64, prompt_mean=800,
         output_mean=200, arrivals=2.0, token_budget=2048, steps=100),
    Case("h03-paged128-pp4-middle", "hidden", 1203, L7, 8, stage="middle", block_tokens=128,
         kv_blocks=256, max_seqs=64, prompt_mean=1000, output_mean=60, arrivals=3.0,
         token_budget=2048, steps=100),
    Case("h04-reserved-pp8-last", "hidden", 1204, L7, 4, stage="last", kv_layout="reserved",
         kv_blocks=1024, max_seqs=48, prompt_mean=400, output_mean=120, arrivals=1.0,
         token_budget=2048, steps=150),
    Case("h05-growing-tp2-pp8-first", "hidden", 1205, L7, 4, stage="first", tp=2,
         kv_layout="growing", block_tokens=128, kv_blocks=512, max_seqs=64, prompt_mean=1000,
         output_mean=200, arrivals=3.0, token_budget=2048, steps=150),
    Case("h06-paged32-pp8-middle", "hidden", 1206, L7, 4, stage="middle", block_tokens=32,
         kv_blocks=1024, max_seqs=64, prompt_mean=1000, output_mean=60, arrivals=3.0,
         token_budget=2048, steps=120),
    Case("h07-paged128-pp2-first", "hidden", 1207, L7, 16, stage="first", block_tokens=128,
         kv_blocks=256, max_seqs=64, prompt_mean=1500, output_mean=60, arrivals=3.0,
         token_budget=4096, steps=160, weight=2.0),
    Case("h08-reserved-full-model", "hidden", 1208, L7, 32, stage="full", kv_layout="reserved",
         kv_blocks=1024, max_seqs=64, prompt_mean=500, output_mean=150, arrivals=1.0,
         token_budget=4096, steps=280, weight=2.0),
]


def main(only: set[str] | None = None) -> None:
    write_package(PACKAGE, TITLE, LIMITS, CASES, lambda case: Engine(case).run().buffers, only)


if __name__ == "__main__":
    main(set(sys.argv[1:]) or None)
