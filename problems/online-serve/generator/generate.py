#!/usr/bin/env python3
"""Regenerates the online-serve package: data/public/*.events and problem.toml, from
the windows of Llama engine steps PyTorch recorded for llama-infer
(problems/llama-infer/generator/traces/, read from there).

    python problems/online-serve/generator/generate.py          # standard library only
    python problems/online-serve/generator/generate.py --hidden-seed FILE --out DIR

Deterministic: running it again rewrites every file byte for byte. A case is one
recorded window of a server with continuous batching: requests of drawn prompt and
output lengths are admitted while the KV cache budget allows, prefilled, decoded a
token a step (each layer's keys and values grown by torch.cat) and leave when done.
The weights are left out (they live in their own region, not in the arena); the
caches of requests running before the window are requested first.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_lib"))  # online_trace, ...
sys.path.insert(0, str(Path(__file__).resolve().parent))  # engine

from engine import Labels, label
from hidden import SCALE, TOKEN_CATEGORIES, Draw, scale_size, vary_trace
from online_trace import Made, StepPart, make_case, step_events
from torchtrace import read_trace

HERE = Path(__file__).resolve().parent
TRACES = HERE.parents[1] / "llama-infer" / "generator" / "traces"
TITLE = (
    "Llama serving with continuous batching, one allocation request at a time "
    "(recorded with PyTorch)"
)
HINTS = ("category", "op", "layer", "request", "step")


@dataclass(frozen=True)
class ServeCase:
    name: str
    trace: str  # a trace of llama-infer's generator/traces/
    weight: float = 1.0


# Windows whose events fit a case (5,000 to 200,000): llama-infer's p01 and h01 (two
# steps) are too short, its h07 (40 steps) too long.
PUBLIC = [
    ServeCase("p01-1b-kv4k-b64", "p02-1b-kv4k-b64"),
    ServeCase("p02-8b-kv2k-b32", "p03-8b-kv2k-b32"),
    ServeCase("p03-1b-kv8k-b64-long", "p04-1b-kv8k-b64-long"),
    ServeCase("p04-8b-kv4k-b64", "p05-8b-kv4k-b64"),
    ServeCase("p05-8b-kv1k-b16", "h02-8b-kv1k-b16"),
]
POOL = [
    "p02-1b-kv4k-b64",
    "p03-8b-kv2k-b32",
    "p04-1b-kv8k-b64-long",
    "p05-8b-kv4k-b64",
    "h02-8b-kv1k-b16",
    "h03-1b-kv6k-b48",
    "h04-8b-kv3k-b48",
    "h05-1b-kv6k-b64",
    "h06-8b-kv6k-b64",
]
HIDDEN_WEIGHTS = (1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0)

_cache: dict[str, tuple[dict, Labels]] = {}


def labelled(trace: str) -> tuple[dict, Labels]:
    if trace not in _cache:
        doc = read_trace(TRACES / f"{trace}.json.xz")
        _cache[trace] = (doc, label(doc))
    return _cache[trace]


def events_of(doc: dict, labels: Labels) -> list[tuple]:
    t, cats, names = doc["tensors"], doc["categories"], doc["op_names"]
    op_name, weights = doc["ops"]["name"], cats.index("parameter")
    ids, hints = [], []
    for i, (op, cat) in enumerate(zip(t["op"], t["category"], strict=True)):
        ids.append(None if cat == weights else str(i))
        made_by = names[op_name[op]] if op >= 0 else "-"
        hints.append((cats[cat], made_by, labels.layer[i], labels.request[i], labels.step[i]))
    return step_events(StepPart(doc, ids, hints))


def _comments(trace: str, varied: bool) -> list[str]:
    p = labelled(trace)[0]["provenance"]["step"]
    what = (
        f"{p['model']}, KV budget {p['kv_budget']} tokens, at most {p['max_seqs']} requests "
        f"a step, {p['steps']} steps"
    )
    return [TITLE, what + (" (sizes varied)" if varied else f" ({trace})")]


def build(case: ServeCase) -> Made:
    doc, labels = labelled(case.trace)
    return make_case(HINTS, events_of(doc, labels), _comments(case.trace, False), case.name)


def vary(trace: str, draw: Draw) -> Made:
    """A hidden case: a window of the pool with other token counts, order, lifetimes and
    hints as recorded. What serves the whole batch is scaled per run of ops
    (hidden.vary_trace); what belongs to one request (its KV caches, its attention's
    temporaries) by that request's own factor, as if its prompt had another length, so
    a request's caches still grow step by step (a factor per run would shrink them)."""
    doc, labels = labelled(trace)
    varied = vary_trace(doc, draw)
    factor = [draw.between(*SCALE) for _ in range(labels.requests)]
    t, cats = doc["tensors"], doc["categories"]
    sizes = list(varied["tensors"]["size"])
    for i, (size, cat) in enumerate(zip(t["size"], t["category"], strict=True)):
        if labels.request[i] != "-" and cats[cat] in TOKEN_CATEGORIES:
            sizes[i] = scale_size(size, factor[int(labels.request[i][1:])])
    varied = {**varied, "tensors": {**varied["tensors"], "size": sizes}}
    return make_case(HINTS, events_of(varied, labels), _comments(trace, True), "hidden")


if __name__ == "__main__":
    from online_trace import online_main

    online_main(HERE, TITLE, PUBLIC, build, POOL, HIDDEN_WEIGHTS, vary, sys.argv)
