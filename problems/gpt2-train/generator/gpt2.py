"""One training step of a GPT-2-like model on one pipeline stage, op by op.

Sizes are dtype bytes x tensor shape. The forward keeps what its backward
reads (the way PyTorch autograd saves tensors); each backward op frees the
saved tensors of its forward op, so within a micro-batch activations die in
reverse (LIFO) order, while a pipeline schedule interleaves micro-batches so
that across micro-batches they die first-in first-out.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from timeline import Buffer, Timeline

ACT_ALIGN = 512  # PyTorch's caching allocator rounds blocks to 512 bytes
SMALL_ALIGN = 256  # cudaMalloc's guaranteed alignment; enough for vectors
WS_ALIGN = 4096  # cuBLAS/cuBLASLt workspaces are page aligned
CUBLAS_WS = 4 * 1024 * 1024  # CUBLAS_WORKSPACE_CONFIG=:4096:8 chunk


@dataclass(frozen=True)
class Model:
    name: str
    n_layer: int
    d_model: int
    n_head: int
    vocab: int = 50257
    n_ctx: int = 1024


GPT2_SMALL = Model("gpt2-small", 12, 768, 12)
GPT2_MEDIUM = Model("gpt2-medium", 24, 1024, 16)
GPT2_XL = Model("gpt2-xl", 48, 1600, 25)


@dataclass(frozen=True)
class Case:
    name: str
    split: str  # public | hidden
    seed: int
    model: Model
    stages: int  # pipeline depth P
    stage: int  # which stage this trace is (0 = holds the embedding)
    micro_batches: int
    micro_batch_size: int
    seq_len: int  # longest sequence; micro-batches are padded to their own longest
    schedule: str = "1f1b"  # 1f1b | gpipe | zb (1F1B with weight gradients deferred, ZB-H1)
    attention: str = "eager"  # eager (saves B*H*S*S probabilities) | flash
    recompute: str = "none"  # none | selective (attention core) | full (per layer)
    ragged: bool = True  # sequence lengths vary per micro-batch
    # lazy: fp32 grads made by the first backward | persistent: Megatron DDP buffer
    grad_buffer: str = "lazy"
    weight: float = 1.0

    def layers(self) -> range:
        """Contiguous slice of layers on this stage (earlier stages get the extra ones)."""
        per, extra = divmod(self.model.n_layer, self.stages)
        first = self.stage * per + min(self.stage, extra)
        return range(first, first + per + (self.stage < extra))


def seq_lens(case: Case, rng: random.Random) -> list[int]:
    """Padded sequence length per micro-batch.

    With dynamic padding each micro-batch is as long as its longest sample,
    rounded up to 64 tokens; document lengths are heavy-tailed, so the
    maximum over a micro-batch varies from one micro-batch to the next.
    """
    if not case.ragged:
        return [case.seq_len] * case.micro_batches
    out = []
    for _ in range(case.micro_batches):
        longest = max(min(case.seq_len, int(rng.paretovariate(1.2) * case.seq_len / 6))
                      for _ in range(case.micro_batch_size))
        out.append(max(64, -(-longest // 64) * 64))
    return out


def order(case: Case) -> list[tuple[str, int]]:
    """Forward (F), backward (B) and weight-gradient (W) passes on this stage.

    1F1B: P - s - 1 warm-up forwards, then alternate one forward and one
    backward, then drain. GPipe: all forwards, then all backwards. Both run
    backwards in micro-batch order, so stored activations leave FIFO.
    zb (zero-bubble ZB-H1): like 1F1B, but B only computes input gradients;
    each W runs P - s - 1 backwards later, so the GEMM inputs and output
    gradients that W reads outlive the rest of their micro-batch.
    """
    m = case.micro_batches
    warm = m if case.schedule == "gpipe" else min(case.stages - case.stage - 1, m)
    seq = [("F", i) for i in range(warm)]
    for i in range(m - warm):
        seq += [("F", warm + i), ("B", i)]
    seq += [("B", i) for i in range(m - warm, m)]
    if case.schedule != "zb":
        return seq
    lag = case.stages - case.stage - 1
    out, pending = [], []
    for kind, i in seq:
        out.append((kind, i))
        if kind == "B":
            pending.append(("W", i))
            if len(pending) > lag:
                out.append(pending.pop(0))
    return out + pending


class Step:
    """Emits the buffers of one step of `case` into a Timeline."""

    def __init__(self, case: Case):
        self.c = case
        self.m = case.model
        self.tl = Timeline()
        self.rng = random.Random(case.seed)
        self.seq = seq_lens(case, self.rng)
        self.first = case.stage == 0
        self.last = case.stage == case.stages - 1
        self.params: dict[str, int] = {}  # name -> numel, in creation order
        self.persistent: list[Buffer] = []
        self.main_grad: dict[str, Buffer] = {}
        self.saved: dict[int, dict] = {}  # micro-batch -> what its backward needs
        self.deferred: dict[int, list[tuple[str, str, int, Buffer, Buffer]]] = {}

    # ---- parameters and optimizer state -------------------------------------
    def declare_params(self) -> None:
        d, v = self.m.d_model, self.m.vocab
        if self.first or self.last:  # the last stage keeps a tied copy of wte
            self.params["wte"] = v * d
        if self.first:
            self.params["wpe"] = self.m.n_ctx * d
        for layer in self.c.layers():
            for name, numel in [("ln1.g", d), ("ln1.b", d), ("attn.qkv.w", 3 * d * d),
                                ("attn.qkv.b", 3 * d), ("attn.proj.w", d * d), ("attn.proj.b", d),
                                ("ln2.g", d), ("ln2.b", d), ("mlp.fc.w", 4 * d * d),
                                ("mlp.fc.b", 4 * d), ("mlp.proj.w", 4 * d * d), ("mlp.proj.b", d)]:
                self.params[f"L{layer}.{name}"] = numel
        if self.last:
            self.params["ln_f.g"] = d
            self.params["ln_f.b"] = d
        for p, n in self.params.items():
            # fp16/bf16 working copy; fp32 master weights, Adam m and v
            self.persistent.append(self.tl.alloc(f"{p}", 2 * n, align(n)))
            for kind in ("master", "adam_m", "adam_v"):
                self.persistent.append(self.tl.alloc(f"{p}.{kind}", 4 * n, align(n)))
            if self.c.grad_buffer == "persistent":
                # Megatron-style DDP: one fp32 grad buffer allocated at start-up
                self.main_grad[p] = self.tl.alloc(f"{p}.main_grad", 4 * n, align(n))

    def wgrad(self, p: str, tag: str, tokens: int) -> None:
        """Weight gradient of parameter p, accumulated in fp32 across micro-batches.

        With lazy grad buffers, main_grad is created by the first
        micro-batch's backward (grads are set to None after every step) and
        lives until the optimizer reads it; persistent ones live all along.
        GEMM weight gradients reduce over all tokens; cuBLASLt splits that
        reduction (split-K) and keeps fp32 partial products in a workspace.
        """
        n = self.params[p]
        if p not in self.main_grad:
            self.main_grad[p] = self.tl.alloc(f"{p}.main_grad", 4 * n, align(n))
        if p.endswith(".w") and tokens >= 2048:
            splits = min(4, tokens // 2048)
            self.tl.temp(f"{p}.wgrad_splitk.{tag}", splits * 4 * n, WS_ALIGN)
        elif not p.endswith(".w"):
            # bias / LayerNorm parameter: per-block fp32 partial sums
            self.tl.temp(f"{p}.wgrad_part.{tag}", 4 * n * max(1, tokens // 512) // 8, SMALL_ALIGN)

    def gemm_wgrad(self, p: str, mb: int, n: int, inp: Buffer, dout: Buffer,
                   inp_read_later: bool = False) -> None:
        """Weight gradient of a GEMM: reads its saved input and its output gradient.

        Under the zero-bubble schedule it is deferred to the W pass, which
        keeps both tensors alive until then.
        """
        if self.c.schedule == "zb":
            self.deferred.setdefault(mb, []).append((p, f"mb{mb}", n, inp, dout))
            return
        self.wgrad(p, f"mb{mb}", n)
        self.tl.free(dout)
        if not inp_read_later:
            self.tl.free(inp)

    def weight_pass(self, mb: int) -> None:
        for p, tag, n, inp, dout in self.deferred.pop(mb):
            self.tl.op()
            self.wgrad(p, tag, n)
            self.tl.free(inp, dout)

    def optimizer(self) -> None:
        """Grad-norm clipping then Adam, one fused op per parameter."""
        for p, n in self.params.items():
            self.tl.op()
            self.tl.temp(f"{p}.gnorm_part", 4 * max(1, n // 4096) * 8, SMALL_ALIGN)
        for p, n in self.params.items():
            self.tl.op()
            # the unscaled, clipped gradient and the Adam update in fp32
            self.tl.temp(f"{p}.adam_grad", 4 * n, align(n))
            self.tl.temp(f"{p}.adam_update", 4 * n, align(n))
            g = self.main_grad.pop(p)
            if self.c.grad_buffer == "lazy":
                self.tl.free(g)
            else:
                self.persistent.append(g)

    # ---- helpers --------------------------------------------------------------
    def act(self, name: str, nbytes: int) -> Buffer:
        return self.tl.alloc(name, nbytes, ACT_ALIGN if nbytes >= 4096 else SMALL_ALIGN)

    def gemm_ws(self, name: str) -> None:
        self.tl.temp(name, CUBLAS_WS, WS_ALIGN)

    # ---- one transformer layer ------------------------------------------------
    def forward_layer(self, layer: int, mb: int, x: Buffer, keep: str,
                      tag: str) -> tuple[Buffer, dict]:
        """Forward of `layer` on micro-batch mb; returns (output, saved tensors).

        keep: 'all' saves what backward reads, 'no_attn' drops the attention
        core (selective recompute), 'none' saves nothing (full recompute; the
        caller keeps the layer input as the checkpoint).
        """
        tl, d, h = self.tl, self.m.d_model, self.m.n_head
        s = self.seq[mb]
        b = self.c.micro_batch_size
        n = b * s
        pre = f"L{layer}"
        sfx = f"mb{mb}{tag}"
        saved: dict[str, Buffer] = {}

        def done(key: str, buf: Buffer, attn: bool = False) -> None:
            # the forward no longer needs buf: keep it for backward or drop it
            if keep == "all" or (keep == "no_attn" and not attn):
                saved[key] = buf
            else:
                tl.free(buf)

        tl.op()  # ln1
        a1 = self.act(f"{pre}.ln1.out.{sfx}", 2 * n * d)
        done("ln1.mean", self.act(f"{pre}.ln1.mean.{sfx}", 4 * n))
        done("ln1.rstd", self.act(f"{pre}.ln1.rstd.{sfx}", 4 * n))
        tl.op()  # qkv projection
        qkv = self.act(f"{pre}.attn.qkv.{sfx}", 2 * n * 3 * d)
        self.gemm_ws(f"{pre}.attn.qkv.ws.{sfx}")
        done("a1", a1)
        if self.c.attention == "eager":
            tl.op()  # scores = q k^T / sqrt(dk), causal mask applied in place
            scores = self.act(f"{pre}.attn.scores.{sfx}", 2 * b * h * s * s)
            tl.op()  # softmax
            probs = self.act(f"{pre}.attn.probs.{sfx}", 2 * b * h * s * s)
            tl.free(scores)
            tl.op()  # attention dropout
            mask = self.act(f"{pre}.attn.dmask.{sfx}", b * h * s * s)
            pdrop = self.act(f"{pre}.attn.pdrop.{sfx}", 2 * b * h * s * s)
            done("probs", probs, attn=True)
            tl.op()  # context = P v
            ctx = self.act(f"{pre}.attn.ctx.{sfx}", 2 * n * d)
            done("dmask", mask, attn=True)
            done("pdrop", pdrop, attn=True)
        else:
            tl.op()  # fused flash attention: output and log-sum-exp per row
            ctx = self.act(f"{pre}.attn.ctx.{sfx}", 2 * n * d)
            done("lse", self.act(f"{pre}.attn.lse.{sfx}", 4 * b * h * s))
        done("qkv", qkv)
        tl.op()  # output projection
        o = self.act(f"{pre}.attn.proj.out.{sfx}", 2 * n * d)
        self.gemm_ws(f"{pre}.attn.proj.ws.{sfx}")
        done("ctx", ctx)
        tl.op()  # dropout + residual add
        done("rmask1", self.act(f"{pre}.attn.rmask.{sfx}", n * d))
        xm = self.act(f"{pre}.resid1.{sfx}", 2 * n * d)
        tl.free(o)
        tl.op()  # ln2
        a2 = self.act(f"{pre}.ln2.out.{sfx}", 2 * n * d)
        done("ln2.mean", self.act(f"{pre}.ln2.mean.{sfx}", 4 * n))
        done("ln2.rstd", self.act(f"{pre}.ln2.rstd.{sfx}", 4 * n))
        done("xm", xm)
        tl.op()  # fc
        f = self.act(f"{pre}.mlp.fc.out.{sfx}", 2 * n * 4 * d)
        self.gemm_ws(f"{pre}.mlp.fc.ws.{sfx}")
        done("a2", a2)
        tl.op()  # gelu
        g = self.act(f"{pre}.mlp.gelu.out.{sfx}", 2 * n * 4 * d)
        done("f", f)
        tl.op()  # mlp projection
        o2 = self.act(f"{pre}.mlp.proj.out.{sfx}", 2 * n * d)
        self.gemm_ws(f"{pre}.mlp.proj.ws.{sfx}")
        done("g", g)
        tl.op()  # dropout + residual add
        done("rmask2", self.act(f"{pre}.mlp.rmask.{sfx}", n * d))
        y = self.act(f"{pre}.resid2.{sfx}", 2 * n * d)
        tl.free(o2)
        return y, saved

    def recompute_attention(self, layer: int, mb: int, sv: dict) -> None:
        """Selective recompute: rebuild the attention core from the saved qkv."""
        tl, h, b, s = self.tl, self.m.n_head, self.c.micro_batch_size, self.seq[mb]
        sfx = f"mb{mb}.re"
        tl.op()
        scores = self.act(f"L{layer}.attn.scores.{sfx}", 2 * b * h * s * s)
        tl.op()
        sv["probs"] = self.act(f"L{layer}.attn.probs.{sfx}", 2 * b * h * s * s)
        tl.free(scores)
        tl.op()
        sv["dmask"] = self.act(f"L{layer}.attn.dmask.{sfx}", b * h * s * s)
        sv["pdrop"] = self.act(f"L{layer}.attn.pdrop.{sfx}", 2 * b * h * s * s)

    def backward_layer(self, layer: int, mb: int, x: Buffer, sv: dict, dy: Buffer) -> Buffer:
        """Backward of `layer`; frees its saved tensors and its input x; returns dx."""
        tl, d, h = self.tl, self.m.d_model, self.m.n_head
        s, b = self.seq[mb], self.c.micro_batch_size
        n = b * s
        pre, sfx = f"L{layer}", f"mb{mb}"
        tl.op()  # mlp dropout backward; dy itself stays live as the residual gradient
        d_o2 = self.act(f"{pre}.mlp.proj.dout.{sfx}", 2 * n * d)
        tl.free(sv["rmask2"])
        tl.op()  # mlp projection: dgrad and wgrad
        d_g = self.act(f"{pre}.mlp.gelu.dout.{sfx}", 2 * n * 4 * d)
        self.gemm_ws(f"{pre}.mlp.proj.dgrad_ws.{sfx}")
        self.wgrad(f"{pre}.mlp.proj.b", sfx, n)
        self.gemm_wgrad(f"{pre}.mlp.proj.w", mb, n, sv["g"], d_o2)
        tl.op()  # gelu backward
        d_f = self.act(f"{pre}.mlp.fc.dout.{sfx}", 2 * n * 4 * d)
        tl.free(sv["f"], d_g)
        tl.op()  # fc: dgrad and wgrad
        d_a2 = self.act(f"{pre}.ln2.dout.{sfx}", 2 * n * d)
        self.gemm_ws(f"{pre}.mlp.fc.dgrad_ws.{sfx}")
        self.wgrad(f"{pre}.mlp.fc.b", sfx, n)
        self.gemm_wgrad(f"{pre}.mlp.fc.w", mb, n, sv["a2"], d_f)
        tl.op()  # ln2 backward fused with the residual gradient sum
        d_xm = self.act(f"{pre}.resid1.dout.{sfx}", 2 * n * d)
        self.wgrad(f"{pre}.ln2.g", sfx, n)
        self.wgrad(f"{pre}.ln2.b", sfx, n)
        tl.free(sv["ln2.mean"], sv["ln2.rstd"], sv["xm"], d_a2, dy)
        tl.op()  # attention-branch dropout backward
        d_o = self.act(f"{pre}.attn.proj.dout.{sfx}", 2 * n * d)
        tl.free(sv["rmask1"])
        tl.op()  # output projection: dgrad and wgrad
        d_ctx = self.act(f"{pre}.attn.ctx.dout.{sfx}", 2 * n * d)
        self.gemm_ws(f"{pre}.attn.proj.dgrad_ws.{sfx}")
        self.wgrad(f"{pre}.attn.proj.b", sfx, n)
        flash = self.c.attention == "flash"
        # flash attention's backward reads ctx again, right after this op
        self.gemm_wgrad(f"{pre}.attn.proj.w", mb, n, sv["ctx"], d_o, inp_read_later=flash)
        if not flash:
            if "probs" not in sv:
                self.recompute_attention(layer, mb, sv)
            tl.op()  # P v backward: dP and dv
            d_pd = self.act(f"{pre}.attn.pdrop.dout.{sfx}", 2 * b * h * s * s)
            d_qkv = self.act(f"{pre}.attn.qkv.dout.{sfx}", 2 * n * 3 * d)
            tl.free(sv["pdrop"], d_ctx)
            tl.op()  # dropout backward
            d_p = self.act(f"{pre}.attn.probs.dout.{sfx}", 2 * b * h * s * s)
            tl.free(sv["dmask"], d_pd)
            tl.op()  # softmax backward
            d_sc = self.act(f"{pre}.attn.scores.dout.{sfx}", 2 * b * h * s * s)
            tl.free(sv["probs"], d_p)
            tl.op()  # q k^T backward: dq, dk
            tl.free(d_sc, sv["qkv"])
        else:
            tl.op()  # flash attention backward recomputes P block by block
            d_qkv = self.act(f"{pre}.attn.qkv.dout.{sfx}", 2 * n * 3 * d)
            self.tl.temp(f"{pre}.attn.dq_accum.{sfx}", 4 * n * d, ACT_ALIGN)
            tl.free(sv["lse"], sv["qkv"], d_ctx)
            if self.c.schedule != "zb":
                tl.free(sv["ctx"])
        tl.op()  # qkv projection: dgrad and wgrad
        d_a1 = self.act(f"{pre}.ln1.dout.{sfx}", 2 * n * d)
        self.gemm_ws(f"{pre}.attn.qkv.dgrad_ws.{sfx}")
        self.wgrad(f"{pre}.attn.qkv.b", sfx, n)
        self.gemm_wgrad(f"{pre}.attn.qkv.w", mb, n, sv["a1"], d_qkv)
        tl.op()  # ln1 backward fused with the residual gradient sum
        dx = self.act(f"{pre}.resid0.dout.{sfx}", 2 * n * d)
        self.wgrad(f"{pre}.ln1.g", sfx, n)
        self.wgrad(f"{pre}.ln1.b", sfx, n)
        tl.free(sv["ln1.mean"], sv["ln1.rstd"], x, d_a1, d_xm)
        return dx

    # ---- stage entry and exit ---------------------------------------------------
    def stage_input(self, mb: int) -> tuple[Buffer, dict]:
        """Embedding on stage 0, otherwise the activation received from the previous stage."""
        tl, d = self.tl, self.m.d_model
        n = self.c.micro_batch_size * self.seq[mb]
        if not self.first:
            tl.op()  # p2p receive
            return self.act(f"recv.act.mb{mb}", 2 * n * d), {}
        tl.op()  # data loader hands over token ids
        ids = self.act(f"input_ids.mb{mb}", 8 * n)
        tl.op()  # token + position embedding
        emb = self.act(f"embed.sum.mb{mb}", 2 * n * d)
        tl.op()  # embedding dropout
        mask = self.act(f"embed.dmask.mb{mb}", n * d)
        x = self.act(f"embed.out.mb{mb}", 2 * n * d)
        tl.free(emb)
        return x, {"ids": ids, "mask": mask}

    def stage_output(self, mb: int, y: Buffer) -> dict:
        """LM head and loss on the last stage, otherwise send to the next stage."""
        tl, d, v = self.tl, self.m.d_model, self.m.vocab
        n = self.c.micro_batch_size * self.seq[mb]
        if not self.last:
            tl.op()  # p2p send; the buffer is released when the send completes
            tl.op()
            tl.free(y)
            return {}
        tl.op()  # final layer norm
        af = self.act(f"ln_f.out.mb{mb}", 2 * n * d)
        sv = {"y": y, "mean": self.act(f"ln_f.mean.mb{mb}", 4 * n),
              "rstd": self.act(f"ln_f.rstd.mb{mb}", 4 * n), "af": af}
        tl.op()  # lm head (tied embedding)
        sv["logits"] = self.act(f"lm_head.logits.mb{mb}", 2 * n * v)
        self.gemm_ws(f"lm_head.ws.mb{mb}")
        tl.op()  # cross entropy: fp32 log-sum-exp per token, loss per token
        sv["lse"] = self.act(f"loss.lse.mb{mb}", 4 * n)
        tl.temp(f"loss.per_token.mb{mb}", 4 * n, SMALL_ALIGN)
        return sv

    def head_backward(self, mb: int, sv: dict) -> Buffer:
        tl, d, v = self.tl, self.m.d_model, self.m.vocab
        n = self.c.micro_batch_size * self.seq[mb]
        if not self.last:
            tl.op()  # p2p receive of the output gradient
            return self.act(f"recv.grad.mb{mb}", 2 * n * d)
        tl.op()  # cross entropy backward: softmax - onehot
        dlog = self.act(f"lm_head.logits.dout.mb{mb}", 2 * n * v)
        tl.free(sv["logits"], sv["lse"])
        tl.op()  # lm head dgrad and (tied) wgrad
        daf = self.act(f"ln_f.dout.mb{mb}", 2 * n * d)
        self.gemm_ws(f"lm_head.dgrad_ws.mb{mb}")
        self.wgrad("wte", f"head.mb{mb}", n)
        tl.free(dlog, sv["af"])
        tl.op()  # final layer norm backward
        dy = self.act(f"resid.final.dout.mb{mb}", 2 * n * d)
        self.wgrad("ln_f.g", f"mb{mb}", n)
        self.wgrad("ln_f.b", f"mb{mb}", n)
        tl.free(daf, sv["mean"], sv["rstd"], sv["y"])
        return dy

    def input_backward(self, mb: int, sv: dict, dx: Buffer) -> None:
        tl, d, v = self.tl, self.m.d_model, self.m.vocab
        n = self.c.micro_batch_size * self.seq[mb]
        if not self.first:
            tl.op()  # p2p send of the input gradient
            tl.op()
            tl.free(dx)
            return
        tl.op()  # embedding dropout backward
        demb = self.act(f"embed.dout.mb{mb}", 2 * n * d)
        tl.free(sv["mask"], dx)
        tl.op()  # embedding backward: dense fp16 scatter-add, then into main_grad
        tl.temp(f"wte.dense_grad.mb{mb}", 2 * v * d, ACT_ALIGN)
        self.wgrad("wte", f"embed.mb{mb}", n)
        self.wgrad("wpe", f"mb{mb}", n)
        tl.free(sv["ids"], demb)

    # ---- the step ---------------------------------------------------------------
    def forward(self, mb: int) -> None:
        x, inp = self.stage_input(mb)
        ctx = {"input": inp, "layers": []}
        keep = {"none": "all", "selective": "no_attn", "full": "none"}[self.c.recompute]
        for layer in self.c.layers():
            y, sv = self.forward_layer(layer, mb, x, keep, "")
            ctx["layers"].append((layer, x, sv))
            x = y
        ctx["head"] = self.stage_output(mb, x)
        self.saved[mb] = ctx

    def backward(self, mb: int) -> None:
        ctx = self.saved.pop(mb)
        dy = self.head_backward(mb, ctx["head"])
        for layer, x, sv in reversed(ctx["layers"]):
            if self.c.recompute == "full":
                y, sv = self.forward_layer(layer, mb, x, "all", ".re")
                self.tl.free(y)  # the recomputed output itself is not needed
            dy = self.backward_layer(layer, mb, x, sv, dy)
        self.input_backward(mb, ctx["input"], dy)

    def run(self) -> Timeline:
        self.declare_params()
        for kind, mb in order(self.c):
            {"F": self.forward, "B": self.backward, "W": self.weight_pass}[kind](mb)
        self.optimizer()
        self.tl.close(*self.persistent)
        return self.tl


def align(numel: int) -> int:
    """Parameters and their states: vectors 256-aligned, matrices 512-aligned."""
    return SMALL_ALIGN if numel < 1 << 16 else ACT_ALIGN
