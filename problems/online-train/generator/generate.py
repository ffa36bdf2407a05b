#!/usr/bin/env python3
"""Regenerates the online-train package: data/public/*.events and problem.toml, from
the GPT-2 training steps PyTorch recorded for gpt2-train
(problems/gpt2-train/generator/traces/, read from there).

    python problems/online-train/generator/generate.py          # standard library only
    python problems/online-train/generator/generate.py --hidden-seed FILE --out DIR

Deterministic: running it again rewrites every file byte for byte. A case is K
training iterations of one pipeline stage, each iteration one recorded step (1F1B
over the micro-batches, then Adam): the parameters are requested first (the model
is made), Adam's moments inside the first iteration's optimizer step (torch.optim.Adam
makes its state lazily, in its first step, before any update); both live on,
everything else of an iteration is freed within it. An iteration
is its trace as recorded, or the trace with each micro-batch's token-dependent
tensors scaled by a factor of its own (other sequence lengths in that iteration).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_lib"))  # online_trace, ...
sys.path.insert(0, str(Path(__file__).resolve().parent))  # steps

from hidden import ALIGNMENT, SCALE, TOKEN_CATEGORIES, Draw, Reject
from online_trace import MAX_EVENTS, MIN_EVENTS, Made, StepPart, make_case, step_events
from steps import label_tensors, optimizer_start
from torchtrace import read_trace

HERE = Path(__file__).resolve().parent
TRACES = HERE.parents[1] / "gpt2-train" / "generator" / "traces"
TITLE = "GPT-2 training iterations, one allocation request at a time (recorded with PyTorch)"
HINTS = ("category", "op", "layer", "iteration", "microbatch")
PUBLIC_SEED = b"online-train public cases"  # the public cases' varied iterations


@dataclass(frozen=True)
class Iteration:
    trace: str  # a trace of gpt2-train's generator/traces/
    vary: bool = False  # scale each micro-batch's tokens (seeded) or keep it as recorded


@dataclass(frozen=True)
class TrainCase:
    name: str
    iterations: tuple[Iteration, ...]
    weight: float = 1.0


def _it(*names: str) -> tuple[Iteration, ...]:
    """Iterations by trace name; a trailing '~' varies that iteration's micro-batches."""
    return tuple(Iteration(n.rstrip("~"), n.endswith("~")) for n in names)


# Each case repeats one stage's step, as a training loop does, but not always to the
# byte: fixed shapes (p01), two micro-batch plans alternating (p02), sequence lengths
# drawn again per iteration (p03 to p05); p04 recomputes activations (traces/r*, made
# by record.py: every block checkpointed).
PUBLIC = [
    TrainCase("p01-small-pp8-fixed-x3", _it(*["p02-small-pp8-mb16x1"] * 3)),
    TrainCase(
        "p02-small-pp4-alternating-x4",
        _it(*["p01-small-pp4-mb8x2", "h01-small-pp4-mb12x4-ragged"] * 2),
    ),
    TrainCase(
        "p03-small-pp4-last-x3",
        _it(*["h02-small-pp4-last-mb8x1-s512", *["h02-small-pp4-last-mb8x1-s512~"] * 2]),
    ),
    TrainCase(
        "p04-small-pp4-stage1-recompute-x3",
        _it("r01-small-pp4-stage1-mb8x4-recompute", *["r01-small-pp4-stage1-mb8x4-recompute~"] * 2),
    ),
    TrainCase("p05-medium-pp4-mb32x4-x2", _it("h06-medium-pp4-mb32x4", "h06-medium-pp4-mb32x4~")),
]

# The hidden cases' bases: the recorded steps of one model and pipeline stage (the
# same parameters; with and without recomputation), drawn per iteration. gpt2-train's
# h07 (100,810 storages a step) is left out: two iterations would pass the 200,000
# events of a case.
POOL = [
    ("p02-small-pp8-mb16x1", "h04-small-pp8-mb24x8"),
    ("p01-small-pp4-mb8x2", "h01-small-pp4-mb12x4-ragged", "r02-small-pp4-mb8x2-recompute"),
    ("p04-small-pp4-stage1-mb8x4", "r01-small-pp4-stage1-mb8x4-recompute"),
    ("h02-small-pp4-last-mb8x1-s512",),
    ("p03-small-pp2-mb6x2-ragged",),
    ("p05-medium-pp8-mb16x8-s512",),
    ("h03-medium-pp8-stage1-mb14x4",),
    ("h05-medium-pp4-stage1-mb8x4", "r03-medium-pp4-stage1-mb8x4-recompute"),
    ("h06-medium-pp4-mb32x4",),
]
HIDDEN_WEIGHTS = (1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0)
ITERATIONS = (2, 4)  # a hidden case's, drawn

_cache: dict[str, tuple[dict, tuple]] = {}


def labelled(trace: str) -> tuple[dict, tuple]:
    """A recorded step and its labels (steps.label_tensors), read once."""
    if trace not in _cache:
        own = HERE / "traces" / f"{trace}.json.xz"  # recorded for this problem (record.py)
        doc = read_trace(own if own.is_file() else TRACES / f"{trace}.json.xz")
        _cache[trace] = (doc, label_tensors(doc))
    return _cache[trace]


def vary_microbatches(doc: dict, mb: list[str], draw: Draw) -> dict:
    """The step as if each micro-batch had other token counts: its token-dependent
    storages (hidden.TOKEN_CATEGORIES) scaled by a factor drawn per micro-batch
    (hidden.SCALE, per mille), rounded to the allocator's 512 bytes."""
    t, cats = doc["tensors"], doc["categories"]
    factors = [draw.between(*SCALE) for _ in range(doc["provenance"]["step"]["micro_batches"])]
    sizes = []
    for size, cat, m in zip(t["size"], t["category"], mb, strict=True):
        if m != "-" and cats[cat] in TOKEN_CATEGORIES and size >= ALIGNMENT:
            f = factors[int(m)]
            size = max(ALIGNMENT, (size * f // 1000 + ALIGNMENT // 2) // ALIGNMENT * ALIGNMENT)
        sizes.append(size)
    return {**doc, "tensors": {**t, "size": sizes}}


def case_events(iterations: list[tuple[str, Draw | None]]) -> list[tuple]:
    """The events of K iterations: (trace, draw to vary it with or None) each."""
    events: list[tuple] = []
    persistent: tuple[int, ...] | None = None  # the first step's sizes, by rank
    for k, (trace, draw) in enumerate(iterations):
        doc, (layer, mb, rank) = labelled(trace)
        if draw is not None:
            doc = vary_microbatches(doc, mb, draw)
        t, cats, names = doc["tensors"], doc["categories"], doc["op_names"]
        op_name = doc["ops"]["name"]
        kept = frozenset(i for i, r in enumerate(rank) if r >= 0)
        sizes = tuple(t["size"][i] for i in sorted(kept, key=rank.__getitem__))
        assert persistent in (None, sizes), f"{trace}: not the same model stage"
        persistent = sizes
        ids, hints, at = [], [], {}
        # Adam makes its state lazily, in the first step's _init_group: every moment
        # (zeros_like, parameter order) after the step opens, before any update
        made = optimizer_start([names[x] for x in op_name]) + 1
        for i, (op, cat) in enumerate(zip(t["op"], t["category"], strict=True)):
            c = cats[cat]
            if c == "parameter" and rank[i] >= 0:  # w: parameters, by rank
                ids.append(f"w{rank[i]}")
                hints.append((c, "-", layer[i], "-", "-"))
            elif rank[i] >= 0:  # m: Adam's moments, by rank
                ids.append(f"m{rank[i]}")
                hints.append((c, "zeros_like", layer[i], "0", "-"))
                at[i] = made
            else:
                ids.append(f"{k}.{i}")
                hints.append((c, names[op_name[op]], layer[i], str(k), mb[i]))
        if k > 0:
            part = StepPart(doc, ids, hints, live=kept, keep=kept)
        else:
            part = StepPart(doc, ids, hints, keep=kept, at=at)
        events += step_events(part)
    return events


def _comments(iterations: list[tuple[str, Draw | None]]) -> list[str]:
    out = [TITLE, "iterations (generator/traces/r* or gpt2-train's; ~ = micro-batches rescaled):"]
    return out + [f"  {k}: {n}{' ~' if d else ''}" for k, (n, d) in enumerate(iterations)]


def build(case: TrainCase) -> Made:
    its = [
        (it.trace, Draw(PUBLIC_SEED, case.name, k) if it.vary else None)
        for k, it in enumerate(case.iterations)
    ]
    return make_case(HINTS, case_events(its), _comments(its), case.name)


def vary(group: tuple[str, ...], draw: Draw) -> Made:
    """A hidden case: K iterations of the group's stage, each a drawn trace of the
    group with its micro-batches rescaled; drawn again when out of the event range."""
    its = []
    for k in range(draw.between(*ITERATIONS)):
        its.append((draw.choice(group), Draw(draw.below(2**128).to_bytes(16, "big"), k)))
    events = case_events(its)
    if not MIN_EVENTS <= len(events) <= MAX_EVENTS:
        raise Reject(f"{len(events)} events")
    return make_case(HINTS, events, [TITLE], "hidden")


if __name__ == "__main__":
    from online_trace import online_main

    online_main(HERE, TITLE, PUBLIC, build, POOL, HIDDEN_WEIGHTS, vary, sys.argv)
