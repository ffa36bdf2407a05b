"""One training step of a GPT-style decoder on one device, as an `offload` case.

The step is a list of compute steps (forward layers, loss, backward layers in
reverse, optimizer update) and a list of tensors, each with the sorted steps
that use it; the first use produces the tensor. Sizes are dtype bytes x shape.
A step's duration is a roofline estimate: its FLOPs at 400 TFLOP/s or the bytes
it moves at 2 TB/s, whichever is longer, rounded up to a whole µs (>= 1).

Everything here is deterministic (the case's knobs and constants: case.py).
"""

from __future__ import annotations

from case import (
    BIG_ALIGN,
    FLOPS_PER_US,
    HBM_BYTES_PER_US,
    LINKS,
    MIB,
    SMALL,
    SMALL_ALIGN,
    Case,
    Tensor,
    seq_lens,
)


class Step:
    """Builds the steps and tensors of one training step of `case`."""

    def __init__(self, case: Case):
        self.c = case
        self.m = case.model
        self.durations: list[int] = []
        self.names: list[str] = []
        self.tensors: dict[str, Tensor] = {}
        self.params: dict[str, int] = {}  # parameter name -> numel, in registration order
        self.groups: list[tuple[str, list[str]]] = []  # optimizer step -> its parameters

    # ---- recording ------------------------------------------------------------
    def t(self, tid: str, size: int, alignment: int | None = None) -> Tensor:
        """Declare a tensor (it is produced by the first step that uses it)."""
        assert tid not in self.tensors, tid
        assert size > 0, tid
        if alignment is None:
            alignment = SMALL_ALIGN if size < SMALL else BIG_ALIGN
        tensor = Tensor(tid, size, alignment, len(self.tensors), [])
        self.tensors[tid] = tensor
        return tensor

    def step(self, name: str, flops: int, nbytes: int, uses: list[Tensor]) -> None:
        s = len(self.durations)
        dur = max(1, -(-flops // FLOPS_PER_US), -(-nbytes // HBM_BYTES_PER_US))
        self.durations.append(dur)
        self.names.append(name)
        for tensor in uses:
            assert not tensor.uses or tensor.uses[-1] < s, f"{tensor.id} used twice in {name}"
            tensor.uses.append(s)

    def p(self, name: str) -> Tensor:
        return self.tensors[name]

    def grad(self, name: str) -> Tensor:
        """The fp32 gradient of a parameter: produced by its first backward use."""
        gid = f"{name}.grad"
        if gid not in self.tensors:
            self.t(gid, 4 * self.params[name])
        return self.tensors[gid]

    # ---- parameters -----------------------------------------------------------
    def declare_params(self) -> None:
        d, v = self.m.d_model, self.m.vocab
        groups: list[tuple[str, list[tuple[str, int]]]] = [("embed", [("embed.w", v * d)])]
        for layer in range(self.m.n_layer):
            groups.append(
                (
                    f"L{layer}",
                    [
                        (f"L{layer}.norm", 4 * d),  # LayerNorm 1 and 2, gain and bias
                        (f"L{layer}.qkv.w", 3 * d * d + 3 * d),
                        (f"L{layer}.o.w", d * d + d),
                        (f"L{layer}.up.w", 4 * d * d + 4 * d),
                        (f"L{layer}.down.w", 4 * d * d + d),
                    ],
                )
            )
        groups.append(("head", [("final.norm", 2 * d), ("head.w", v * d)]))
        for group, params in groups:
            for name, numel in params:
                self.params[name] = numel
                self.t(name, 2 * numel)  # bf16 working weights
            self.groups.append((group, [name for name, _ in params]))

    def optimizer_step(self, group: str, names: list[str]) -> None:
        """Adam on one parameter group: reads the fp32 grad, updates the fp32
        master weights and both moments, writes the bf16 working weights."""
        uses, flops, nbytes = [], 0, 0
        for name in names:
            n = self.params[name]
            states = [self.t(f"{name}.{k}", 4 * n) for k in ("master", "adam_m", "adam_v")]
            uses += [self.p(name), self.grad(name), *states]
            flops += 12 * n
            nbytes += 30 * n  # grad 4 + master/m/v read+write 24 + bf16 weight 2
        self.step(f"opt.{group}", flops, nbytes, uses)

    # ---- one micro-batch ------------------------------------------------------
    def forward_layer(self, mb: int, layer: int, s: int, x: Tensor) -> tuple[Tensor, dict]:
        """Forward of one layer; returns its output and what backward reads."""
        c, d, h = self.c, self.m.d_model, self.m.n_head
        b = c.micro_batch_size
        n = b * s
        pre = f"mb{mb}.L{layer}"
        w = {k: self.p(f"L{layer}.{k}") for k in ("norm", "qkv.w", "o.w", "up.w", "down.w")}
        full = c.recompute == "full"
        tag = ".fwd" if full else ""  # under full recompute these die inside the forward
        ln1 = self.t(f"{pre}.ln1{tag}", 2 * n * d)
        ln1s = self.t(f"{pre}.ln1.stats{tag}", 8 * n)
        qkv = self.t(f"{pre}.qkv{tag}", 2 * n * 3 * d)
        self.step(
            f"F.{pre}.qkv",
            2 * n * d * 3 * d,
            2 * n * d * 5 + 2 * 3 * d * d,
            [x, w["norm"], w["qkv.w"], ln1, ln1s, qkv],
        )
        ctx = self.t(f"{pre}.ctx{tag}", 2 * n * d)
        attn_flops = 2 * b * s * s * d  # QK^T and PV, causal (half of 4·b·s²·d)
        if c.attention == "flash":
            aux = self.t(f"{pre}.lse{tag}", 4 * b * h * s)
            self.step(f"F.{pre}.attn", attn_flops, 2 * n * d * 4, [qkv, ctx, aux])
        else:
            keep = c.recompute == "none"
            aux = self.t(f"{pre}.probs{'' if keep else '.fwd'}", 2 * b * h * s * s)
            self.step(f"F.{pre}.attn", attn_flops, 2 * n * d * 4 + 3 * aux.size, [qkv, ctx, aux])
        mid = self.t(f"{pre}.mid{tag}", 2 * n * d)
        self.step(f"F.{pre}.o", 2 * n * d * d, 2 * n * d * 3 + 2 * d * d, [ctx, w["o.w"], x, mid])
        ln2 = self.t(f"{pre}.ln2{tag}", 2 * n * d)
        ln2s = self.t(f"{pre}.ln2.stats{tag}", 8 * n)
        up = self.t(f"{pre}.up{tag}", 2 * n * 4 * d)
        act = self.t(f"{pre}.act{tag}", 2 * n * 4 * d)
        self.step(
            f"F.{pre}.up",
            2 * n * d * 4 * d,
            2 * n * d * 10 + 2 * 4 * d * d,
            [mid, w["norm"], w["up.w"], ln2, ln2s, up, act],
        )
        out = self.t(f"mb{mb}.L{layer + 1}.x", 2 * n * d)
        self.step(
            f"F.{pre}.down",
            2 * n * 4 * d * d,
            2 * n * d * 6 + 2 * 4 * d * d,
            [act, w["down.w"], mid, out],
        )
        saved = dict(
            ln1=ln1,
            ln1s=ln1s,
            qkv=qkv,
            ctx=ctx,
            aux=aux,
            mid=mid,
            ln2=ln2,
            ln2s=ln2s,
            up=up,
            act=act,
        )
        return out, saved

    def recompute_layer(self, mb: int, layer: int, s: int, x: Tensor, saved: dict) -> dict:
        """Re-run what backward needs before the layer's backward: the whole
        forward from the checkpointed input (full) or the attention core only
        (selective)."""
        c, d, h = self.c, self.m.d_model, self.m.n_head
        b = c.micro_batch_size
        n = b * s
        pre = f"mb{mb}.L{layer}"
        attn_flops = 2 * b * s * s * d
        if c.recompute == "selective":
            probs = self.t(f"{pre}.probs.re", 2 * b * h * s * s)
            self.step(
                f"R.{pre}.attn", attn_flops, 2 * n * d * 3 + 2 * probs.size, [saved["qkv"], probs]
            )
            return dict(saved, aux=probs)
        w = {k: self.p(f"L{layer}.{k}") for k in ("norm", "qkv.w", "o.w", "up.w")}
        r = {}
        r["ln1"] = self.t(f"{pre}.ln1", 2 * n * d)
        r["ln1s"] = self.t(f"{pre}.ln1.stats", 8 * n)
        r["qkv"] = self.t(f"{pre}.qkv", 2 * n * 3 * d)
        self.step(
            f"R.{pre}.qkv",
            2 * n * d * 3 * d,
            2 * n * d * 5 + 2 * 3 * d * d,
            [x, w["norm"], w["qkv.w"], r["ln1"], r["ln1s"], r["qkv"]],
        )
        r["ctx"] = self.t(f"{pre}.ctx", 2 * n * d)
        if c.attention == "flash":
            r["aux"] = self.t(f"{pre}.lse", 4 * b * h * s)
            extra = 0
        else:
            r["aux"] = self.t(f"{pre}.probs", 2 * b * h * s * s)
            extra = 3 * r["aux"].size
        self.step(
            f"R.{pre}.attn", attn_flops, 2 * n * d * 4 + extra, [r["qkv"], r["ctx"], r["aux"]]
        )
        r["mid"] = self.t(f"{pre}.mid", 2 * n * d)
        self.step(
            f"R.{pre}.o",
            2 * n * d * d,
            2 * n * d * 3 + 2 * d * d,
            [r["ctx"], w["o.w"], x, r["mid"]],
        )
        r["ln2"] = self.t(f"{pre}.ln2", 2 * n * d)
        r["ln2s"] = self.t(f"{pre}.ln2.stats", 8 * n)
        r["up"] = self.t(f"{pre}.up", 2 * n * 4 * d)
        r["act"] = self.t(f"{pre}.act", 2 * n * 4 * d)
        self.step(
            f"R.{pre}.up",
            2 * n * d * 4 * d,
            2 * n * d * 10 + 2 * 4 * d * d,
            [r["mid"], w["norm"], w["up.w"], r["ln2"], r["ln2s"], r["up"], r["act"]],
        )
        return r

    def backward_layer(
        self, mb: int, layer: int, s: int, x: Tensor, dout: Tensor, sv: dict
    ) -> Tensor:
        """Backward of one layer (input and weight gradients); returns dL/dx."""
        c, d, _h = self.c, self.m.d_model, self.m.n_head
        b = c.micro_batch_size
        n = b * s
        pre = f"mb{mb}.L{layer}"
        lw = f"L{layer}"
        w = {k: self.p(f"{lw}.{k}") for k in ("norm", "qkv.w", "o.w", "up.w", "down.w")}
        # MLP down projection, then GELU backward
        dup = self.t(f"{pre}.up.grad", 2 * n * 4 * d)
        self.step(
            f"B.{pre}.down",
            4 * n * 4 * d * d,
            2 * n * d * 14 + 6 * 4 * d * d,
            [dout, w["down.w"], sv["act"], sv["up"], self.grad(f"{lw}.down.w"), dup],
        )
        # MLP up projection, LayerNorm 2 backward, residual
        dmid = self.t(f"{pre}.mid.grad", 2 * n * d)
        self.step(
            f"B.{pre}.up",
            4 * n * d * 4 * d,
            2 * n * d * 12 + 6 * 4 * d * d,
            [
                dup,
                w["up.w"],
                sv["ln2"],
                sv["ln2s"],
                sv["mid"],
                w["norm"],
                dout,
                self.grad(f"{lw}.up.w"),
                self.grad(f"{lw}.norm"),
                dmid,
            ],
        )
        # attention output projection
        dctx = self.t(f"{pre}.ctx.grad", 2 * n * d)
        self.step(
            f"B.{pre}.o",
            4 * n * d * d,
            2 * n * d * 3 + 6 * d * d,
            [dmid, w["o.w"], sv["ctx"], self.grad(f"{lw}.o.w"), dctx],
        )
        # attention core
        dqkv = self.t(f"{pre}.qkv.grad", 2 * n * 3 * d)
        if c.attention == "flash":
            dq_acc = self.t(f"{pre}.dq_accum", 4 * n * d)  # fp32 dQ accumulator (FlashAttention-2)
            self.step(
                f"B.{pre}.attn",
                5 * b * s * s * d,
                2 * n * d * 10,
                [dctx, sv["qkv"], sv["ctx"], sv["aux"], dq_acc, dqkv],
            )
        else:
            dprobs = self.t(f"{pre}.probs.grad", sv["aux"].size)  # dP, then dS in place
            self.step(
                f"B.{pre}.attn",
                4 * b * s * s * d,
                2 * n * d * 7 + 4 * dprobs.size,
                [dctx, sv["qkv"], sv["aux"], dprobs, dqkv],
            )
        # QKV projection, LayerNorm 1 backward, residual
        dx = self.t(f"{pre}.x.grad", 2 * n * d)
        self.step(
            f"B.{pre}.qkv",
            4 * n * d * 3 * d,
            2 * n * d * 10 + 6 * 3 * d * d,
            [
                dqkv,
                w["qkv.w"],
                sv["ln1"],
                sv["ln1s"],
                x,
                w["norm"],
                dmid,
                self.grad(f"{lw}.qkv.w"),
                self.grad(f"{lw}.norm"),
                dx,
            ],
        )
        return dx

    def micro_batch(self, mb: int, s: int, last: bool) -> None:
        c, d, v = self.c, self.m.d_model, self.m.vocab
        n = c.micro_batch_size * s
        tokens = self.t(f"mb{mb}.tokens", 4 * n)
        labels = self.t(f"mb{mb}.labels", 4 * n)
        x = self.t(f"mb{mb}.L0.x", 2 * n * d)
        self.step(f"F.mb{mb}.embed", n * d, 4 * n * d + 4 * n, [tokens, self.p("embed.w"), x])
        xs, saved = [x], []
        for layer in range(self.m.n_layer):
            x, sv = self.forward_layer(mb, layer, s, x)
            xs.append(x)
            saved.append(sv)
        lnf = self.t(f"mb{mb}.lnf", 2 * n * d)
        lnfs = self.t(f"mb{mb}.lnf.stats", 8 * n)
        logits = self.t(f"mb{mb}.logits", 2 * n * v)
        self.step(
            f"F.mb{mb}.head",
            2 * n * d * v,
            2 * n * v + 2 * v * d + 6 * n * d,
            [x, self.p("final.norm"), self.p("head.w"), lnf, lnfs, logits],
        )
        dlogits = self.t(f"mb{mb}.logits.grad", 2 * n * v)
        loss = self.t(f"mb{mb}.loss", 4 * n)  # per-token loss, fp32
        self.step(f"loss.mb{mb}", 6 * n * v, 4 * n * v + 12 * n, [logits, labels, dlogits, loss])
        dx = self.t(f"mb{mb}.L{self.m.n_layer}.x.grad", 2 * n * d)
        self.step(
            f"B.mb{mb}.head",
            4 * n * d * v,
            2 * n * v + 6 * v * d + 8 * n * d,
            [
                dlogits,
                self.p("head.w"),
                lnf,
                lnfs,
                x,
                self.p("final.norm"),
                self.grad("head.w"),
                self.grad("final.norm"),
                dx,
            ],
        )
        if last and c.optimizer == "fused":
            self.optimizer_step(*self.groups[-1])
        for layer in reversed(range(self.m.n_layer)):
            sv = saved[layer]
            if c.recompute == "full" or (c.recompute == "selective" and c.attention == "eager"):
                sv = self.recompute_layer(mb, layer, s, xs[layer], sv)
            dx = self.backward_layer(mb, layer, s, xs[layer], dx, sv)
            if last and c.optimizer == "fused":
                self.optimizer_step(*self.groups[1 + layer])
        # embedding backward: scatter-add of dL/dx into the table's gradient
        self.step(f"B.mb{mb}.embed", n * d, 8 * n * d + 4 * n, [dx, tokens, self.grad("embed.w")])
        if last and c.optimizer == "fused":
            self.optimizer_step(*self.groups[0])

    def run(self) -> Step:
        c = self.c
        assert c.recompute != "selective" or c.attention == "eager", "selective needs eager"
        self.declare_params()
        lens = seq_lens(c)
        for mb, s in enumerate(lens):
            self.micro_batch(mb, s, mb == len(lens) - 1)
        if c.optimizer == "end":
            for group, names in self.groups:
                self.optimizer_step(group, names)
        unused = [t.id for t in self.tensors.values() if not t.uses]
        assert not unused, unused[:5]
        return self

    # ---- results --------------------------------------------------------------
    def ordered(self) -> list[Tensor]:
        """Tensors by first use, then creation order."""
        return sorted(self.tensors.values(), key=lambda t: (t.uses[0], t.order))

    def max_load(self) -> int:
        """Max over steps of the bytes of tensors live (first use to last use, inclusive)."""
        delta = [0] * (len(self.durations) + 1)
        for t in self.tensors.values():
            delta[t.uses[0]] += t.size
            delta[t.uses[-1] + 1] -= t.size
        live = best = 0
        for x in delta:
            live += x
            best = max(best, live)
        return best

    def floor(self) -> int:
        """Max over steps of the bytes the step's own tensors need together,
        each rounded up to its alignment (so they pack without gaps)."""
        per = [0] * len(self.durations)
        for t in self.tensors.values():
            padded = -(-t.size // t.alignment) * t.alignment
            for s in t.uses:
                per[s] += padded
        return max(per)

    def capacity(self) -> int:
        frac = -(-self.max_load() * self.c.capacity_pct // 100)
        return max(round_mib(frac), round_mib(self.floor()))

    def to_json(self) -> str:
        link = LINKS[self.c.link]
        head = (
            f'{{"capacity":{self.capacity()},"h2d_bandwidth":{link},"d2h_bandwidth":{link},'
            f'"steps":[{",".join(map(str, self.durations))}],"tensors":[\n'
        )
        rows = [
            f'{{"id":"{t.id}","size":{t.size},"alignment":{t.alignment},'
            f'"uses":[{",".join(map(str, t.uses))}]}}'
            for t in self.ordered()
        ]
        return head + ",\n".join(rows) + "\n]}\n"


def round_mib(n: int) -> int:
    return -(-n // MIB) * MIB
