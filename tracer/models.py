"""Model definitions in plain PyTorch (no weights are downloaded; they are made on the
meta device): GPT-2, a Llama-style decoder with grouped-query attention and a KV
cache, and a small ViT."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


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


class GPTBlock(nn.Module):
    def __init__(self, c: GPTConfig, causal: bool = True):
        super().__init__()
        self.heads, self.causal = c.heads, causal
        self.ln1, self.ln2 = nn.LayerNorm(c.d_model), nn.LayerNorm(c.d_model)
        self.qkv = nn.Linear(c.d_model, 3 * c.d_model)
        self.proj = nn.Linear(c.d_model, c.d_model)
        self.fc = nn.Linear(c.d_model, 4 * c.d_model)
        self.out = nn.Linear(4 * c.d_model, c.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPTStage(nn.Module):
    """Blocks [first, last) of a GPT-2; the embeddings on the first stage, the final
    norm and the (tied) head on the last, so that one stage of a pipeline is a model."""

    def __init__(self, c: GPTConfig, first: int = 0, last: int | None = None):
        super().__init__()
        last = c.layers if last is None else last
        self.has_embed, self.has_head = first == 0, last == c.layers
        if self.has_embed or self.has_head:
            self.wte = nn.Embedding(c.vocab, c.d_model)
        if self.has_embed:
            self.wpe = nn.Embedding(c.context, c.d_model)
        self.blocks = nn.ModuleList(GPTBlock(c) for _ in range(first, last))
        if self.has_head:
            self.ln_f = nn.LayerNorm(c.d_model)

    def forward(self, x: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        if self.has_embed:
            pos = torch.arange(x.shape[1], device=x.device)
            x = self.wte(x) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        if not self.has_head:
            return x
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten())


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


class RMSNorm(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight


def rope(x: torch.Tensor, start: int) -> torch.Tensor:
    """Rotary position embedding for positions start.. of x (b, heads, s, hd)."""
    half = x.shape[-1] // 2
    freqs = 1.0 / (10000 ** (torch.arange(half, device=x.device) / half))
    angles = torch.arange(start, start + x.shape[2], device=x.device)[:, None] * freqs
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)


class KVCache:
    """One request's keys and values per layer, kept as real engines do:
    `reserved` allocates the whole context at admission (static caches), `growing`
    makes a larger tensor with torch.cat at every step (dynamic caches)."""

    def __init__(self, layout: str, reserve: int = 0):
        self.layout, self.reserve, self.length = layout, reserve, 0
        self.k: list[torch.Tensor | None] = []
        self.v: list[torch.Tensor | None] = []

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor):
        while len(self.k) <= layer:
            self.k.append(None)
            self.v.append(None)
        s = k.shape[2]
        if self.layout == "growing":
            old_k, old_v = self.k[layer], self.v[layer]
            self.k[layer] = k if old_k is None else torch.cat((old_k, k), dim=2)
            self.v[layer] = v if old_v is None else torch.cat((old_v, v), dim=2)
            return self.k[layer], self.v[layer]
        if self.k[layer] is None:
            shape = (*k.shape[:2], self.reserve, k.shape[3])
            self.k[layer] = k.new_empty(shape)
            self.v[layer] = v.new_empty(shape)
        end = self.length + s
        self.k[layer][:, :, self.length : end] = k
        self.v[layer][:, :, self.length : end] = v
        return self.k[layer][:, :, :end], self.v[layer][:, :, :end]

    def tensors(self) -> list[torch.Tensor]:
        return [t for t in (*self.k, *self.v) if t is not None]


class LlamaBlock(nn.Module):
    def __init__(self, c: LlamaConfig, index: int):
        super().__init__()
        self.index, self.heads, self.kv_heads = index, c.heads, c.kv_heads
        hd = c.d_model // c.heads
        self.norm1, self.norm2 = RMSNorm(c.d_model), RMSNorm(c.d_model)
        self.q = nn.Linear(c.d_model, c.d_model, bias=False)
        self.kv = nn.Linear(c.d_model, 2 * c.kv_heads * hd, bias=False)
        self.o = nn.Linear(c.d_model, c.d_model, bias=False)
        self.gate_up = nn.Linear(c.d_model, 2 * c.ffn, bias=False)
        self.down = nn.Linear(c.ffn, c.d_model, bias=False)

    def forward(self, x: torch.Tensor, cache: KVCache) -> torch.Tensor:
        b, s, d = x.shape
        hd = d // self.heads
        h = self.norm1(x)
        q = self.q(h).view(b, s, self.heads, hd).transpose(1, 2)
        k, v = self.kv(h).view(b, s, 2, self.kv_heads, hd).permute(2, 0, 3, 1, 4)
        q, k = rope(q, cache.length), rope(k, cache.length)
        k, v = cache.update(self.index, k, v)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=s > 1, enable_gqa=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, d))
        gate, up = self.gate_up(self.norm2(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


class Llama(nn.Module):
    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.embed = nn.Embedding(c.vocab, c.d_model)
        self.blocks = nn.ModuleList(LlamaBlock(c, i) for i in range(c.layers))
        self.norm = RMSNorm(c.d_model)
        self.head = nn.Linear(c.d_model, c.vocab, bias=False)

    @torch.no_grad()
    def forward(self, tokens: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """Logits of the last position; the cache grows by the tokens given."""
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x, cache)
        cache.length += tokens.shape[1]
        return self.head(self.norm(x[:, -1:]))


@dataclass(frozen=True)
class ViTConfig:
    image: int = 224
    patch: int = 16
    layers: int = 12
    d_model: int = 384
    heads: int = 6
    classes: int = 1000


VIT = {"vit-small": ViTConfig(), "vit-tiny": ViTConfig(32, 8, 2, 64, 4, 10)}


class ViT(nn.Module):
    """A ViT-S/16 (DeiT-small's shape): patch embedding, pre-norm blocks, class token."""

    def __init__(self, c: ViTConfig):
        super().__init__()
        self.patch = nn.Conv2d(3, c.d_model, c.patch, stride=c.patch)
        tokens = (c.image // c.patch) ** 2 + 1
        self.cls = nn.Parameter(torch.zeros(1, 1, c.d_model))
        self.pos = nn.Parameter(torch.zeros(1, tokens, c.d_model))
        gpt = GPTConfig(c.layers, c.d_model, c.heads, 1, tokens)
        self.blocks = nn.ModuleList(GPTBlock(gpt, causal=False) for _ in range(c.layers))
        self.norm, self.head = nn.LayerNorm(c.d_model), nn.Linear(c.d_model, c.classes)

    def forward(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        x = self.patch(images).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls.expand(x.shape[0], -1, -1), x), dim=1) + self.pos
        for block in self.blocks:
            x = block(x)
        return F.cross_entropy(self.head(self.norm(x[:, 0])), labels)
