"""The steps the recorder runs: a pipeline stage's training step (GPT-2, 1F1B), a serving
window with continuous batching (Llama, KV cache), a ViT training step."""

from __future__ import annotations

import random
from collections import deque
from dataclasses import asdict, dataclass

import torch

from tracer.configs import GPT2, LLAMA, VIT
from tracer.models import GPTStage, KVCache, Llama, ViT
from tracer.record import Recorder, Recording


@dataclass(frozen=True)
class TrainStep:
    model: str = "gpt2-small"
    stages: int = 1
    stage: int = 0
    micro_batches: int = 1
    batch: int = 1
    seq: int = 1024
    ragged_seed: int | None = None  # seeded sequence lengths per micro-batch (else all seq)


def record_train(step: TrainStep, recompute: bool = False) -> Recording:
    """One optimizer step of a pipeline stage: 1F1B over the micro-batches (warm-up
    forwards, then one forward and one backward in turn), then Adam. `recompute`: every
    transformer block under torch.utils.checkpoint (reentrant): the forward keeps only
    each block's input, the backward runs the block's forward again first."""
    c = GPT2[step.model]
    per = c.layers // step.stages
    first, last = step.stage * per, (step.stage + 1) * per
    if step.stage == step.stages - 1:
        last = c.layers
    with torch.device("meta"):
        model = GPTStage(c, first, last)
    if recompute:
        for block in model.blocks:
            _recomputed(block)
    opt = torch.optim.Adam(model.parameters(), foreach=False)
    lengths = _lengths(step)
    _warm_up(model, opt, step, lengths[0])
    rec = Recorder()
    with rec:
        rec.mark(list(model.parameters()), "parameter")
        rec.mark([list(s.values()) for s in opt.state.values()], "optimizer_state")
        in_flight: deque = deque()
        warm = min(step.stages - step.stage - 1, step.micro_batches)
        order = ["F"] * warm + ["F", "B"] * (step.micro_batches - warm) + ["B"] * warm
        mb = 0
        for kind in order:
            if kind == "F":
                in_flight.append(_forward(model, step, lengths[mb], rec))
                mb += 1
            else:
                _backward(model, in_flight.popleft())
        rec.mark([p.grad for p in model.parameters()], "gradient")
        opt.step()
        opt.zero_grad(set_to_none=True)
    return rec.rec


def _recomputed(block: torch.nn.Module) -> None:
    from torch.utils.checkpoint import checkpoint

    forward = block.forward
    block.forward = lambda x: checkpoint(forward, x, use_reentrant=True)


def _lengths(step: TrainStep) -> list[int]:
    if step.ragged_seed is None:
        return [step.seq] * step.micro_batches
    rng = random.Random(step.ragged_seed)  # heavy-tailed lengths, padded to 64 tokens
    return [
        min(step.seq, 64 * -(-int(rng.paretovariate(1.2) * step.seq / 5) // 64))
        for _ in range(step.micro_batches)
    ]


def _forward(model: GPTStage, step: TrainStep, seq: int, rec: Recorder):
    shape = (step.batch, seq)
    if model.has_embed:
        x = torch.zeros(shape, dtype=torch.long, device="meta")
    else:  # the activation received from the previous stage
        x = torch.empty((*shape, model.blocks[0].proj.in_features), device="meta")
        x.requires_grad_(True)
    rec.mark(x, "input")
    labels = torch.zeros(shape, dtype=torch.long, device="meta") if model.has_head else None
    return model(x, labels)


def _backward(model: GPTStage, out: torch.Tensor) -> None:
    if model.has_head:
        out.backward()
    else:  # the gradient received from the next stage
        out.backward(torch.empty_like(out))


def _warm_up(model: GPTStage, opt: torch.optim.Optimizer, step: TrainStep, seq: int) -> None:
    """One micro-batch and an optimizer step outside the recording: Adam's moments
    exist before the recorded step, as they do in every step after the first."""
    _backward(model, _forward(model, step, seq, Recorder()))
    opt.step()
    opt.zero_grad(set_to_none=True)


@dataclass(frozen=True)
class ServeWindow:
    model: str = "llama-8b"
    layout: str = "growing"  # growing | reserved
    steps: int = 40
    seed: int = 1
    max_seqs: int = 16
    arrivals: float = 1.0  # mean new requests per engine step
    prompt_mean: int = 512
    output_mean: int = 64
    max_context: int = 4096
    warm: int = 0  # requests already running when the window opens
    kv_budget: int = 0  # tokens of KV cache (prompt + longest output) admitted at once; 0: any


def record_serve(window: ServeWindow) -> Recording:
    """Engine steps of a server with continuous batching: each step admits arriving
    requests and runs one forward pass over the whole prompts of the new ones and one
    token of every other running request; a request's KV cache is freed when it has
    its last token. `warm` requests are running when the window opens: their prefill
    is not recorded, their caches count from time 0."""
    with torch.device("meta"):
        model = Llama(LLAMA[window.model]).to(torch.bfloat16)
    rng = random.Random(window.seed)
    waiting = deque(_request(window, rng) for _ in range(window.warm))
    running: list[_Request] = []
    _admit(window, waiting, running)
    if running:
        _step(model, running, Recorder())
    rec = Recorder()
    with rec:
        rec.mark(list(model.parameters()), "parameter")
        rec.mark([r.cache.tensors() for r in running], "kv_cache")
        for _ in range(window.steps):
            waiting.extend(_request(window, rng) for _ in range(_poisson(rng, window.arrivals)))
            _admit(window, waiting, running)
            if running:
                _step(model, running, rec)
            running = [r for r in running if r.left > 0]
    return rec.rec


@dataclass
class _Request:
    cache: KVCache
    prompt: int
    left: int  # tokens still to generate


def _request(w: ServeWindow, rng: random.Random) -> _Request:
    prompt = max(1, min(w.max_context // 2, int(rng.expovariate(1 / w.prompt_mean))))
    output = max(1, min(w.max_context - prompt, int(rng.expovariate(1 / w.output_mean))))
    return _Request(KVCache(w.layout, reserve=prompt + output), prompt, output)


def _admit(w: ServeWindow, waiting: deque, running: list[_Request]) -> None:
    """First come, first served while the batch has a seat and, with a KV budget, the
    cache can hold every admitted request's prompt and longest output (as vLLM's
    scheduler does, so that no request is ever preempted)."""
    held = sum(r.cache.reserve for r in running)
    while waiting and len(running) < w.max_seqs:
        if w.kv_budget and running and held + waiting[0].cache.reserve > w.kv_budget:
            return
        held += waiting[0].cache.reserve
        running.append(waiting.popleft())


def _step(model: Llama, running: list[_Request], rec: Recorder) -> None:
    """One forward pass: a new request's whole prompt (its prefill), one token of
    every other; each request leaves with one more token."""
    batch = [(r.cache, r.prompt if r.cache.length == 0 else 1) for r in running]
    tokens = torch.zeros((sum(n for _, n in batch),), dtype=torch.long, device="meta")
    rec.mark(tokens, "input")
    model(tokens, batch).argmax(-1)
    for r in running:
        r.left -= 1
        rec.mark(r.cache.tensors(), "kv_cache")


def _poisson(rng: random.Random, mean: float) -> int:
    n, t = 0, rng.expovariate(1.0)
    while t < mean:
        n += 1
        t += rng.expovariate(1.0)
    return n


@dataclass(frozen=True)
class VisionStep:
    model: str = "vit-small"
    batch: int = 32


def record_vision(step: VisionStep) -> Recording:
    with torch.device("meta"):
        model = ViT(VIT[step.model])
    c = VIT[step.model]
    opt = torch.optim.Adam(model.parameters(), foreach=False)

    def one() -> None:
        images = torch.empty((step.batch, 3, c.image, c.image), device="meta")
        labels = torch.zeros((step.batch,), dtype=torch.long, device="meta")
        model(images, labels).backward()
        rec.mark([p.grad for p in model.parameters()], "gradient")
        opt.step()
        opt.zero_grad(set_to_none=True)

    rec = Recorder()
    one()  # warm-up, unrecorded (the mode is not entered)
    rec = Recorder()
    with rec:
        rec.mark(list(model.parameters()), "parameter")
        rec.mark([list(s.values()) for s in opt.state.values()], "optimizer_state")
        one()
    return rec.rec


def describe(step: TrainStep | ServeWindow | VisionStep) -> dict:
    kind = {TrainStep: "train", ServeWindow: "serve", VisionStep: "vision"}[type(step)]
    return {"kind": kind, **asdict(step)}
