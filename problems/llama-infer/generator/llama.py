"""A window of a Llama-7B serving run with continuous batching and a paged KV cache.

The engine works like vLLM: every engine step runs one forward pass over a
batch that mixes decoding requests (one token each) with chunks of new
prompts (chunked prefill, bounded by a per-step token budget). The KV cache
is paged: each layer keeps K and V of `block_tokens` tokens per block, a
request gets a new block when its context grows past a block boundary and
gives all of them back when it finishes. Requests arrive at random and have
random prompt and output lengths, so blocks die in no particular order.

Weights live in their own region and are not part of the arena: the arena
holds the KV blocks and the activations of each step.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from timeline import Buffer, Timeline

ACT_ALIGN = 512  # PyTorch caching-allocator granularity
META_ALIGN = 256  # small int tensors: positions, slot mapping, block tables
WS_ALIGN = 4096  # attention split-KV workspace


@dataclass(frozen=True)
class Model:
    name: str
    n_layer: int = 32
    d_model: int = 4096
    n_head: int = 32
    n_kv_head: int = 32
    ffn: int = 11008
    vocab: int = 32000

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_head


LLAMA_7B = Model("llama-7b")


@dataclass(frozen=True)
class Case:
    name: str
    split: str
    seed: int
    model: Model
    layers: int  # layers on this device (a pipeline stage when < n_layer)
    stage: str = "full"  # full | first | middle | last: which ends of the model it holds
    tp: int = 1  # tensor-parallel degree: heads and FFN columns split tp ways
    kv_layout: str = "paged"  # paged | reserved | growing (see grow_cache)
    growth: float = 1.0  # growing: new capacity = max(needed, growth x old capacity)
    block_tokens: int = 16  # paged: tokens per block; growing: capacity step
    kv_blocks: int = 2048  # KV budget per layer in units of block_tokens: admission keeps within it
    max_seqs: int = 32  # at most this many requests in a batch
    token_budget: int = 2048  # tokens per engine step (chunked prefill)
    warmup_steps: int = 200  # simulated before the window starts, so the cache is warm
    steps: int = 60  # engine steps in the window
    arrivals: float = 0.5  # mean new requests per step
    chunked: bool = True  # False: vLLM v0 scheduling, prefill-only steps of whole prompts
    prompt_mean: int = 600
    output_mean: int = 200
    max_len: int = 4096
    weight: float = 1.0


@dataclass
class Request:
    rid: int
    prompt: int
    output: int
    done_prompt: int = 0  # prompt tokens already in the cache
    generated: int = 0
    blocks: dict[int, list[Buffer]] = field(default_factory=dict)  # layer -> blocks

    @property
    def context(self) -> int:
        return self.done_prompt + self.generated

    def total(self) -> int:
        return self.prompt + self.output


def lognormal(rng: random.Random, mean: float, sigma: float, lo: int, hi: int) -> int:
    """Heavy-tailed lengths with the given mean, as seen in chat traces."""
    mu = math.log(mean) - sigma * sigma / 2
    return max(lo, min(hi, int(rng.lognormvariate(mu, sigma))))


class Engine:
    """Scheduler plus the buffer trace of the steps inside the window."""

    def __init__(self, case: Case):
        self.c = case
        self.m = case.model
        self.rng = random.Random(case.seed)
        self.tl = Timeline()
        self.recording = False
        self.waiting: list[Request] = []
        self.running: list[Request] = []
        self.next_rid = 0
        self.reserved = 0  # blocks promised to admitted requests (per layer)

    # ---- sizes ------------------------------------------------------------------
    def kv_block_bytes(self) -> int:
        kv_heads = max(1, self.m.n_kv_head // self.c.tp)
        return 2 * self.c.block_tokens * kv_heads * self.m.head_dim * 2  # K and V, fp16

    def blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.c.block_tokens)

    # ---- scheduling -----------------------------------------------------------
    def arrive(self) -> None:
        # Poisson arrivals: number of new requests this step
        k, p, limit = 0, self.rng.random(), math.exp(-self.c.arrivals)
        while p > limit:
            k += 1
            p *= self.rng.random()
        for _ in range(k):
            prompt = lognormal(self.rng, self.c.prompt_mean, 0.8, 16, self.c.max_len // 2)
            output = lognormal(self.rng, self.c.output_mean, 1.0, 4, self.c.max_len - prompt)
            self.waiting.append(Request(self.next_rid, prompt, output))
            self.next_rid += 1

    def schedule(self) -> list[tuple[Request, int]]:
        """Pick (request, tokens) for the next step: decodes first, then prompt chunks.

        A request is admitted only when the pool can hold its whole prompt and
        output, so no request is ever preempted; the pool stays nearly full.
        """
        budget = self.c.token_budget
        batch = []
        for r in self.running:
            if r.done_prompt == r.prompt and budget > 0:
                batch.append((r, 1))
                budget -= 1
        for r in self.running:
            if r.done_prompt < r.prompt and budget > 0:
                n = min(r.prompt - r.done_prompt, budget)
                batch.append((r, n))
                budget -= n
        while self.waiting and budget > 0 and len(self.running) < self.c.max_seqs:
            r = self.waiting[0]
            need = self.blocks_for(r.total())
            if self.reserved + need > self.c.kv_blocks:
                break
            self.waiting.pop(0)
            self.reserved += need
            self.running.append(r)
            n = min(r.prompt, budget)
            batch.append((r, n))
            budget -= n
        return batch

    def schedule_v0(self) -> list[tuple[Request, int]]:
        """Prefill-only steps of whole prompts while any fit, otherwise a decode step."""
        batch, budget = [], self.c.token_budget
        while self.waiting and len(self.running) < self.c.max_seqs:
            r = self.waiting[0]
            need = self.blocks_for(r.total())
            # v0 requires max_num_batched_tokens >= max_model_len: a long prompt runs alone
            if (batch and r.prompt > budget) or self.reserved + need > self.c.kv_blocks:
                break
            self.waiting.pop(0)
            self.reserved += need
            self.running.append(r)
            batch.append((r, r.prompt))
            budget -= r.prompt
        if batch:
            return batch
        return [(r, 1) for r in self.running]

    # ---- one step -------------------------------------------------------------
    def step(self, index: int) -> None:
        self.arrive()
        batch = self.schedule() if self.c.chunked else self.schedule_v0()
        if not batch:
            return
        new_ctx = {}
        for r, n in batch:
            if r.done_prompt < r.prompt:
                new_ctx[r.rid] = r.done_prompt + n
            else:
                new_ctx[r.rid] = r.context + 1
        # a request samples a token when its prompt is complete after this step
        sampling = [r for r, n in batch if r.done_prompt + n >= r.prompt]
        finishing = [r for r in sampling if r.generated + 1 >= r.output]
        if self.recording:
            self.emit(index, batch, new_ctx, sampling, finishing)
        for r, n in batch:
            if r.done_prompt < r.prompt:
                r.done_prompt += n
                if r.done_prompt == r.prompt:
                    r.generated += 1  # the prefill's last position yields the first token
            else:
                r.generated += 1
            if not self.recording:
                r.blocks = {}  # before the window opens nothing is recorded
        for r in finishing:
            self.running.remove(r)
            self.reserved -= self.blocks_for(r.total())

    def run(self) -> Timeline:
        full = self.c.stage == "full"
        assert not full or self.c.layers == self.m.n_layer, "a full model holds every layer"
        for i in range(self.c.warmup_steps):
            self.step(i)
        self.recording = True
        self.tl.op()  # the window opens on a warm cache: blocks of running requests
        for r in self.running:
            for layer in range(self.c.layers):
                r.blocks[layer] = []
                self.grow_cache(r, layer, r.context)
        for i in range(self.c.steps):
            self.step(self.c.warmup_steps + i)
        self.tl.op()
        for r in self.running:
            for blocks in r.blocks.values():
                self.tl.free(*blocks)  # still running when the window closes
        self.tl.close()
        return self.tl

    def grow_cache(self, r: Request, layer: int, tokens: int) -> None:
        """Make room for `tokens` tokens of K and V of request r in `layer`.

        paged: one more fixed-size block per `block_tokens` tokens.
        reserved: one contiguous buffer, sized at admission for the prompt
        and the longest output the request may produce.
        growing: one contiguous buffer; when it is full, a buffer larger by
        `block_tokens` tokens (or `growth` times larger) is allocated, the
        cache copied over and the old buffer released in the same op (both
        live while it runs).
        """
        have = r.blocks.setdefault(layer, [])
        need = self.blocks_for(tokens)
        if self.c.kv_layout == "paged":
            for b in range(len(have), need):
                name = f"r{r.rid}.L{layer}.kv{b}"
                have.append(self.tl.alloc(name, self.kv_block_bytes(), ACT_ALIGN))
            return
        if self.c.kv_layout == "reserved":
            need = max(need, self.blocks_for(r.total()))  # room for the longest possible output
        cap = len(have) and have[0].size // self.kv_block_bytes()
        if need > cap:
            need = max(need, int(cap * self.c.growth))
            new = self.tl.alloc(f"r{r.rid}.L{layer}.kv_{need * self.c.block_tokens}",
                                need * self.kv_block_bytes(), ACT_ALIGN)
            if have:
                self.tl.free(have.pop())
            have.append(new)

    # ---- the buffers of one step ------------------------------------------------
    def emit(self, s: int, batch, new_ctx, sampling, finishing) -> None:
        tl, m, tp = self.tl, self.m, self.c.tp
        d, hd = m.d_model, m.head_dim
        heads, kv_heads = max(1, m.n_head // tp), max(1, m.n_kv_head // tp)
        t = sum(n for _, n in batch)
        seqs = len(batch)
        decodes = sum(1 for r, n in batch if r.done_prompt == r.prompt)
        max_ctx = max(new_ctx.values())
        pre = f"s{s}"
        def act(name: str, nbytes: int) -> Buffer:
            return tl.alloc(f"{pre}.{name}", nbytes, ACT_ALIGN)

        tl.op()  # host-to-device copy of the step's metadata, live for the whole step
        # the cache manager makes room for this step's tokens before the forward pass
        for r, _ in batch:
            for layer in range(self.c.layers):
                self.grow_cache(r, layer, new_ctx[r.rid])
        meta = [tl.alloc(f"{pre}.positions", 8 * t, META_ALIGN),
                tl.alloc(f"{pre}.slot_mapping", 8 * t, META_ALIGN)]
        if self.c.kv_layout == "paged":  # a block table per request
            meta.append(tl.alloc(f"{pre}.block_tables", 4 * seqs * self.blocks_for(max_ctx),
                                 META_ALIGN))
        else:  # one cache pointer per request
            meta.append(tl.alloc(f"{pre}.cache_ptrs", 8 * seqs, META_ALIGN))
        meta.append(tl.alloc(f"{pre}.seq_lens", 4 * seqs, META_ALIGN))
        if self.c.stage in ("full", "first"):
            tl.op()  # token embedding
            ids = tl.alloc(f"{pre}.input_ids", 4 * t, META_ALIGN)
            x = act("embed", 2 * t * d)
            tl.free(ids)
        else:
            tl.op()  # hidden states from the previous pipeline stage
            x = act("recv", 2 * t * d)
        for layer in range(self.c.layers):
            L = f"L{layer}"
            tl.op()  # input RMSNorm
            h = act(f"{L}.norm1", 2 * t * d)
            tl.op()  # fused QKV projection
            qkv = act(f"{L}.qkv", 2 * t * (heads + 2 * kv_heads) * hd)
            tl.free(h)
            tl.op()  # rotary embedding, then K and V written into the cache
            tl.op()  # paged attention over the cache
            out = act(f"{L}.attn", 2 * t * heads * hd)
            if decodes:
                # split-KV decoding: fp32 partial outputs and softmax stats per 512-token partition
                parts = -(-max_ctx // 512)
                tl.temp(f"{pre}.{L}.attn.partials", 4 * decodes * heads * parts * hd, WS_ALIGN)
                tl.temp(f"{pre}.{L}.attn.maxsum", 2 * 4 * decodes * heads * parts, META_ALIGN)
            tl.free(qkv)
            for r in finishing:  # last reader of a finished request's cache in this layer
                tl.free(*r.blocks.pop(layer))
            tl.op()  # output projection (all-reduce in place under tensor parallelism)
            o = act(f"{L}.o_proj", 2 * t * d)
            tl.free(out)
            tl.op()  # residual add + post-attention RMSNorm (fused, residual in place)
            h2 = act(f"{L}.norm2", 2 * t * d)
            tl.free(o)
            tl.op()  # gate and up projections, fused
            gu = act(f"{L}.gate_up", 2 * t * 2 * (m.ffn // tp))
            tl.free(h2)
            tl.op()  # SiLU(gate) * up
            a = act(f"{L}.act", 2 * t * (m.ffn // tp))
            tl.free(gu)
            tl.op()  # down projection
            o2 = act(f"{L}.down", 2 * t * d)
            tl.free(a)
            tl.op()  # residual add into a fresh residual-stream buffer
            y = act(f"{L}.resid", 2 * t * d)
            tl.free(x, o2)
            x = y
        if self.c.stage in ("full", "last") and sampling:
            n = len(sampling)
            tl.op()  # final RMSNorm on the last position of each sampling request
            hf = act("norm_f", 2 * n * d)
            tl.free(x)
            tl.op()  # LM head, vocabulary split tp ways, gathered in fp32
            logits = act("logits", 4 * n * m.vocab)
            tl.temp(f"{pre}.logits_shard", 2 * n * (m.vocab // tp), ACT_ALIGN)
            tl.free(hf)
            tl.op()  # sampling: softmax, top-p sort (values and indices)
            tl.temp(f"{pre}.probs", 4 * n * m.vocab, ACT_ALIGN)
            tl.temp(f"{pre}.sorted", 4 * n * m.vocab, ACT_ALIGN)
            tl.temp(f"{pre}.sorted_idx", 8 * n * m.vocab, ACT_ALIGN)
            tl.free(logits)
            tl.op()
            tl.temp(f"{pre}.next_tokens", 8 * n, META_ALIGN)
        elif self.c.stage in ("full", "last"):
            tl.op()  # no request completes a prompt or a token in this step: nothing to sample
            tl.free(x)
        else:
            tl.op()  # send hidden states to the next stage
            tl.free(x)
        tl.free(*meta)
