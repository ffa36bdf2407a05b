"""Model definitions in plain PyTorch (no weights are downloaded; they are made on the
meta device): GPT-2, a Llama-style decoder with grouped-query attention and a KV
cache, and a small ViT."""

from __future__ import annotations

from itertools import accumulate

import torch
import torch.nn.functional as F
from torch import nn

from tracer.configs import GPT2 as GPT2  # re-exported: a generator imports it from here
from tracer.configs import GPTConfig, LlamaConfig, ViTConfig


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


class RMSNorm(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight


def rotary(positions: torch.Tensor, head_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of the rotary embedding at every token's position (tokens, 1, hd/2),
    made once per engine step and shared by the layers."""
    half = head_dim // 2
    freqs = 1.0 / (10000 ** (torch.arange(half, device=positions.device) / half))
    angles = (positions[:, None] * freqs)[:, None, :]
    return angles.cos(), angles.sin()


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding of x (tokens, heads, hd)."""
    half = x.shape[-1] // 2
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
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
        """Append k, v (kv_heads, tokens, hd); returns the whole context's."""
        while len(self.k) <= layer:
            self.k.append(None)
            self.v.append(None)
        s = k.shape[1]
        if self.layout == "growing":
            old_k, old_v = self.k[layer], self.v[layer]
            self.k[layer] = k.contiguous() if old_k is None else torch.cat((old_k, k), dim=1)
            self.v[layer] = v.contiguous() if old_v is None else torch.cat((old_v, v), dim=1)
            return self.k[layer], self.v[layer]
        if self.k[layer] is None:
            shape = (k.shape[0], self.reserve, k.shape[2])
            self.k[layer] = k.new_empty(shape)
            self.v[layer] = v.new_empty(shape)
        end = self.length + s
        self.k[layer][:, self.length : end] = k
        self.v[layer][:, self.length : end] = v
        return self.k[layer][:, :end], self.v[layer][:, :end]

    def tensors(self) -> list[torch.Tensor]:
        return [t for t in (*self.k, *self.v) if t is not None]


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool):
    """Fused attention as a serving engine runs it, on (heads, tokens, hd): one kernel
    that neither keeps the S x S scores nor copies the KV heads for GQA (k, v keep
    their fewer heads). F.scaled_dot_product_attention on meta tensors takes the math
    path, which does both."""
    out = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    return out(q[None], k[None], v[None], 0.0, causal)[0][0]


# One engine step's batch: each running request's cache and how many of its tokens
# the step runs (its whole prompt when admitted, then one per decoding step).
Batch = list[tuple[KVCache, int]]


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

    def forward(self, x: torch.Tensor, rot: tuple, batch: Batch) -> torch.Tensor:
        """x: (tokens, d), every request's tokens one after the other, as in vLLM:
        the linear layers run on the whole batch, attention request by request."""
        s, d = x.shape
        hd = d // self.heads
        h = self.norm1(x)
        q = rope(self.q(h).view(s, self.heads, hd), *rot).transpose(0, 1)
        k, v = self.kv(h).view(s, 2, self.kv_heads, hd).unbind(1)
        k, v = rope(k, *rot).transpose(0, 1), v.transpose(0, 1)
        outs, start = [], 0
        for cache, n in batch:
            ks, vs = cache.update(self.index, k[:, start : start + n], v[:, start : start + n])
            outs.append(flash_attention(q[:, start : start + n], ks, vs, causal=n > 1))
            start += n
        a = torch.cat(outs, dim=1).transpose(0, 1).reshape(s, d)
        x = x + self.o(a)
        gate, up = self.gate_up(self.norm2(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


class Llama(nn.Module):
    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.head_dim = c.d_model // c.heads
        self.embed = nn.Embedding(c.vocab, c.d_model)
        self.blocks = nn.ModuleList(LlamaBlock(c, i) for i in range(c.layers))
        self.norm = RMSNorm(c.d_model)
        self.head = nn.Linear(c.d_model, c.vocab, bias=False)

    @torch.no_grad()
    def forward(self, tokens: torch.Tensor, batch: Batch) -> torch.Tensor:
        """One engine step over `tokens` (the batch's, concatenated): the logits of
        each request's last token; every cache grows by its tokens."""
        dev = tokens.device
        positions = torch.cat([torch.arange(c.length, c.length + n, device=dev) for c, n in batch])
        rot = rotary(positions, self.head_dim)
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x, rot, batch)
        for cache, n in batch:
            cache.length += n
        ends = torch.tensor(list(accumulate(n for _, n in batch)), device=dev) - 1
        return self.head(self.norm(x[ends]))


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
