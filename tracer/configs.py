"""The models' shapes (no PyTorch here: `memorace trace` checks its arguments against
them before it loads torch; tracer.models builds the models from them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GPTConfig:
    layers: int = 12
    d_model: int = 768
    heads: int = 12
    vocab: int = 50257
    context: int = 1024


GPT2 = {
    "gpt2-small": GPTConfig(),
    "gpt2-medium": GPTConfig(24, 1024, 16),
    "gpt2-xl": GPTConfig(48, 1600, 25),
    "gpt2-tiny": GPTConfig(2, 64, 4, 512, 128),
}


@dataclass(frozen=True)
class LlamaConfig:
    layers: int = 32
    d_model: int = 4096
    heads: int = 32
    kv_heads: int = 8
    ffn: int = 14336
    vocab: int = 128256


LLAMA = {
    "llama-8b": LlamaConfig(),  # Llama-3-8B's shape: GQA with 8 KV heads
    "llama-1b": LlamaConfig(16, 2048, 32, 8, 8192, 128256),
    "llama-tiny": LlamaConfig(2, 64, 4, 2, 128, 512),
}


@dataclass(frozen=True)
class ViTConfig:
    image: int = 224
    patch: int = 16
    layers: int = 12
    d_model: int = 384
    heads: int = 6
    classes: int = 1000


VIT = {"vit-small": ViTConfig(), "vit-tiny": ViTConfig(32, 8, 2, 64, 4, 10)}
