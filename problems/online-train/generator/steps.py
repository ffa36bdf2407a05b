"""What a training step's allocator could know at each request, read back from a
recorded GPT-2 pipeline-stage step (`memorace trace train`, tracer/steps.py): the
micro-batch and the layer of every op, and the layer of every parameter and optimizer
state. Standard library only.

The recorder's step is 1F1B over the micro-batches, then Adam (foreach=False), so the
op sequence has landmarks: a micro-batch's forward starts with the op that makes its
input (`input` category), its backward with the gradient the step seeds it with
(`ones_like` on the last stage, `empty_like` elsewhere), Adam with its
`_record_function_enter_new` and one `lerp_` per parameter. Inside a forward, a block
starts at its first `native_layer_norm`; inside a backward, a block ends with its
first layer norm's `native_layer_norm_backward`.
"""

from __future__ import annotations

from dataclasses import dataclass

PER_BLOCK = 12  # GPTBlock's parameters: ln1, ln2 (weight, bias), qkv, proj, fc, out (w, b)


@dataclass(frozen=True)
class Stage:
    first: int  # model layers [first, last) on this stage
    last: int
    layers: int  # the model's
    micro_batches: int

    @property
    def has_embed(self) -> bool:
        return self.first == 0

    @property
    def has_head(self) -> bool:
        return self.last == self.layers


def stage_of(doc: dict) -> Stage:
    step, layers = doc["provenance"]["step"], doc["provenance"]["model_config"]["layers"]
    per = layers // step["stages"]
    first = step["stage"] * per
    last = layers if step["stage"] == step["stages"] - 1 else first + per
    return Stage(first, last, layers, step["micro_batches"])


def param_layers(s: Stage) -> list[str]:
    """The layer of each parameter in GPTStage.parameters() order: wte (the embedding,
    or the tied head on a last stage), wpe, the blocks, ln_f."""
    out = []
    if s.has_embed or s.has_head:
        out.append("emb" if s.has_embed else "head")
    if s.has_embed:
        out.append("emb")
    for layer in range(s.first, s.last):
        out += [str(layer)] * PER_BLOCK
    if s.has_head:
        out += ["head", "head"]
    return out


def _forward_layers(s: Stage, names: list[str], lo: int, hi: int, out: list[str]) -> None:
    blocks, norms = s.last - s.first, 0
    for t in range(lo, hi):
        if names[t] == "native_layer_norm":
            norms += 1
        if norms == 0:
            out[t] = "emb" if s.has_embed else str(s.first)
        elif (norms - 1) // 2 < blocks:
            out[t] = str(s.first + (norms - 1) // 2)
        else:
            out[t] = "head"


def _backward_layers(s: Stage, names: list[str], lo: int, hi: int, out: list[str]) -> None:
    blocks, before = s.last - s.first, 0  # layer norm backwards before op t
    for t in range(lo, hi):
        c = before
        if s.has_head and c == 0:
            out[t] = "head"
        else:
            j = (c - s.has_head) // 2  # blocks whose backward is done
            if j < blocks:
                out[t] = str(s.last - 1 - j)
            else:
                out[t] = "emb" if s.has_embed else str(s.first)
        if names[t] == "native_layer_norm_backward":
            before += 1


def optimizer_start(names: list[str]) -> int:
    """The op that opens Adam's step: its record_function (zero_grad's comes after
    it), the last one before the first parameter's `lerp_`."""
    first = names.index("lerp_")
    return max(i for i, n in enumerate(names[:first]) if n == "_record_function_enter_new")


def label_ops(doc: dict) -> tuple[list[str], list[str]]:
    """Per op: its layer ('emb', a block's index in the model, 'head') and its
    micro-batch ('-' in the optimizer step)."""
    s = stage_of(doc)
    names = [doc["op_names"][i] for i in doc["ops"]["name"]]
    n_ops = len(names)
    t, cats = doc["tensors"], doc["categories"]
    inputs = sorted(
        lo for lo, c in zip(t["lower"], t["category"], strict=True) if cats[c] == "input"
    )
    seeds = [i for i, n in enumerate(names) if n in ("ones_like", "empty_like")]
    lerps = [i for i, n in enumerate(names) if n == "lerp_"]
    adam = optimizer_start(names)
    params = param_layers(s)
    assert len(inputs) == len(seeds) == s.micro_batches, (len(inputs), len(seeds))
    assert len(lerps) == len(params) and max(seeds) < adam < lerps[0], "not a 1F1B + Adam step"
    starts = sorted([(x, "F", k) for k, x in enumerate(inputs)])
    starts += [(x, "B", k) for k, x in enumerate(seeds)]
    starts.sort()
    assert starts[0][0] == 0
    layer, mb = ["-"] * n_ops, ["-"] * n_ops
    ends = [x for x, _, _ in starts[1:]] + [adam]
    for (lo, kind, k), hi in zip(starts, ends, strict=True):
        (_forward_layers if kind == "F" else _backward_layers)(s, names, lo, hi, layer)
        mb[lo:hi] = [str(k)] * (hi - lo)
    # parameter j's update: from the op before its lerp_ (its step count) to the next's
    bounds = [adam] + [x - 1 for x in lerps[1:]] + [n_ops]
    for j in range(len(lerps)):
        layer[bounds[j] : bounds[j + 1]] = [params[j]] * (bounds[j + 1] - bounds[j])
    return layer, mb


def label_tensors(doc: dict) -> tuple[list[str], list[str], list[int]]:
    """Per storage: layer, micro-batch and, for what existed before the step
    (parameters, then two Adam moments per parameter), its rank among those (else -1)."""
    op_layer, op_mb = label_ops(doc)
    params = param_layers(stage_of(doc))
    t, cats = doc["tensors"], doc["categories"]
    layer, mb, rank = [], [], []
    seen = {"parameter": 0, "optimizer_state": 0}
    for op, cat in zip(t["op"], t["category"], strict=True):
        if op >= 0:
            layer.append(op_layer[op])
            mb.append(op_mb[op])
            rank.append(-1)
            continue
        c = cats[cat]
        assert c in seen, f"a {c} storage existed before the training step"
        j = seen[c]
        seen[c] += 1
        layer.append(params[j if c == "parameter" else j // 2])
        mb.append("-")
        rank.append(j if c == "parameter" else len(params) + j)
    assert seen == {"parameter": len(params), "optimizer_state": 2 * len(params)}, seen
    return layer, mb, rank
