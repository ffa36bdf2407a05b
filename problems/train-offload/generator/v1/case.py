"""The knobs of a v1 `offload` case: the model, the batch, the host link and the
hardware constants the step's durations and alignments come from (transformer.py
builds the step from them).

Everything here is deterministic: the only randomness (ragged sequence
lengths) comes from `random.Random(case.seed)`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

FLOPS_PER_US = 400 * 10**12 // 10**6  # 400 TFLOP/s effective (bf16 tensor cores)
HBM_BYTES_PER_US = 2 * 10**12 // 10**6  # 2 TB/s effective device-memory bandwidth
PCIE5 = 64_000  # PCIe 5.0 x16, bytes per µs per direction (64 GB/s)
C2C = 450_000  # chip-to-chip link (NVLink-C2C class), bytes per µs per direction (450 GB/s)
LINKS = {"pcie": PCIE5, "c2c": C2C}

BIG_ALIGN = 512  # PyTorch caching-allocator granularity
SMALL_ALIGN = 256  # vectors and small tensors (cudaMalloc's guaranteed alignment)
SMALL = 64 * 1024  # tensors below this size use SMALL_ALIGN
VOCAB = 50304  # GPT-2 vocabulary padded to a multiple of 128
MIB = 1 << 20


@dataclass(frozen=True)
class Model:
    name: str
    n_layer: int
    d_model: int
    n_head: int
    vocab: int = VOCAB


GPT_TINY = Model("gpt-tiny", 4, 512, 8, 8192)
GPT_125M = Model("gpt-125m", 12, 768, 12)
GPT_350M = Model("gpt-350m", 24, 1024, 16)
GPT_760M = Model("gpt-760m", 24, 1536, 16)
GPT_1_3B = Model("gpt-1.3b", 24, 2048, 16)
GPT_2_7B = Model("gpt-2.7b", 32, 2560, 32)


@dataclass(frozen=True)
class Case:
    name: str
    split: str  # public | hidden
    seed: int
    model: Model
    micro_batches: int  # gradient-accumulation steps in the step
    micro_batch_size: int  # sequences per micro-batch
    seq_len: int  # tokens per sequence (the longest, when ragged)
    link: str  # pcie | c2c
    capacity_pct: int  # capacity as a percentage of the max load (before the floor)
    attention: str = (
        "flash"  # flash (saves log-sum-exp) | eager (saves B x H x S x S probabilities)
    )
    recompute: str = "none"  # none | selective (attention core) | full (whole layer)
    optimizer: str = "end"  # end (Adam after the whole backward) | fused (per layer, in backward)
    ragged: bool = False  # each micro-batch padded to its own longest sequence
    weight: float = 1.0


@dataclass
class Tensor:
    id: str
    size: int
    alignment: int
    order: int  # creation order, breaks ties between tensors first used by the same step
    uses: list[int]


def seq_lens(case: Case) -> list[int]:
    """Tokens per sequence, one entry per micro-batch.

    Packed batches all have `seq_len`. Ragged ones are padded to their
    longest document, rounded up to 128 tokens; document lengths are
    heavy-tailed (Pareto, alpha 1.1, scale seq_len / 8), drawn from the
    case's seed.
    """
    if not case.ragged:
        return [case.seq_len] * case.micro_batches
    rng = random.Random(case.seed)
    out = []
    for _ in range(case.micro_batches):
        longest = max(
            min(case.seq_len, int(rng.paretovariate(1.1) * case.seq_len / 8))
            for _ in range(case.micro_batch_size)
        )
        out.append(max(128, -(-longest // 128) * 128))
    return out
