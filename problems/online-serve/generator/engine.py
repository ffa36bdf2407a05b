"""What a serving engine's allocator could know at each request, read back from a
recorded window of Llama engine steps (`memorace trace serve`, tracer/steps.py):
the engine step, the layer and the request of every op, the request of every KV
cache tensor. Standard library only.

Landmarks of the recorder's step (tracer/models.py, Llama.forward): a step starts
with the op that makes its token ids (`input` category); after the `embedding`,
each layer has two RMSNorms (a `pow` each) and the final norm one more; inside a
layer, the running requests take their turns in batch order, each making its keys'
and values' cache tensors (`cat` onto the old ones; a prefill's first ones
otherwise) before its attention kernel. The batch keeps its order: requests still
running come first, new ones are appended; one that ends leaves its cache to be
freed when the step is over, before the next step's first op.
"""

from __future__ import annotations

from dataclasses import dataclass

ATTENTION = "_scaled_dot_product_flash_attention_for_cpu"


@dataclass(frozen=True)
class Labels:
    """Per storage: layer ('emb', a layer's index, 'head'), request ('r<n>', numbered in
    order of first appearance; '-' for what serves the whole batch) and engine step
    ('-' for the caches of requests running before the window)."""

    layer: list[str]
    request: list[str]
    step: list[str]
    requests: int


def _steps(doc: dict) -> list[int]:
    t, cats = doc["tensors"], doc["categories"]
    return sorted(
        lo
        for lo, c, op in zip(t["lower"], t["category"], t["op"], strict=True)
        if cats[c] == "input" and op >= 0
    )


def label(doc: dict) -> Labels:
    names = [doc["op_names"][i] for i in doc["ops"]["name"]]
    n_ops, layers = len(names), doc["provenance"]["model_config"]["layers"]
    t, cats = doc["tensors"], doc["categories"]
    kv = cats.index("kv_cache")
    starts = _steps(doc)
    op_layer, op_step, op_req = ["-"] * n_ops, ["-"] * n_ops, ["-"] * n_ops
    for s, (lo, hi) in enumerate(zip(starts, [*starts[1:], n_ops], strict=True)):
        op_step[lo:hi] = [str(s)] * (hi - lo)
        norms, embedded = 0, False
        for op in range(lo, hi):
            embedded = embedded or names[op] == "embedding"
            norms += embedded and names[op] == "pow"
            if norms == 0:
                op_layer[op] = "emb"
            else:
                op_layer[op] = str((norms - 1) // 2) if (norms - 1) // 2 < layers else "head"
        assert norms == 2 * layers + 1, f"step {s}: {norms} RMSNorms for {layers} layers"
    # the caches made in each step and layer, in batch order: (k, v) per request
    made: dict[tuple[int, str], list[int]] = {}
    pre: list[int] = []
    for i, (op, cat) in enumerate(zip(t["op"], t["category"], strict=True)):
        if cat == kv:
            if op < 0:
                pre.append(i)
            else:
                made.setdefault((int(op_step[op]), op_layer[op]), []).append(i)
    request = ["-"] * len(t["op"])
    layer = [op_layer[op] if op >= 0 else "-" for op in t["op"]]
    step = [op_step[op] if op >= 0 else "-" for op in t["op"]]
    per = 2 * layers  # a request's caches before the window: its keys', then values' layers
    assert len(pre) % per == 0, "caches of the warm requests are not whole"
    running = [f"r{k}" for k in range(len(pre) // per)]
    for j, i in enumerate(pre):
        request[i], layer[i] = running[j // per], str(j % per % layers)
    fresh = len(running)
    for s in range(len(starts)):
        nxt = starts[s + 1] if s + 1 < len(starts) else n_ops
        batch = len(made[(s, "0")]) // 2
        new = batch - len(running)
        assert new >= 0, f"step {s}: a running request vanished"
        cat_made = [names[t["op"][k]] == "cat" for k in made[(s, "0")][0::2]]
        assert cat_made == [True] * len(running) + [False] * new, f"step {s}: batch order"
        running += [f"r{k}" for k in range(fresh, fresh + new)]
        fresh += new
        for lay in range(layers):
            caches = made[(s, str(lay))]
            assert len(caches) == 2 * batch, f"step {s} layer {lay}: {len(caches)} caches"
            for pos, req in enumerate(running):
                k_op = t["op"][caches[2 * pos]]
                request[caches[2 * pos]] = request[caches[2 * pos + 1]] = req
                end = k_op
                while names[end] != ATTENTION:  # this request's turn: to its attention
                    end += 1
                op_req[k_op : end + 1] = [req] * (end + 1 - k_op)
        first_k = made[(s, "0")][0::2]
        running = [
            r for r, k in zip(running, first_k, strict=True) if t["upper"][k] != nxt or nxt == n_ops
        ]
    for i, op in enumerate(t["op"]):
        if op >= 0 and t["category"][i] != kv:
            request[i] = op_req[op]
    return Labels(layer, request, step, fresh)
