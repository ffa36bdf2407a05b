"""`memorace trace`: record one step of a model (the `trace` extra: PyTorch)."""

from __future__ import annotations

import importlib.util
import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from judge.console import fail
from tracer.configs import GPT2, LLAMA, VIT

app = typer.Typer(
    help="Record one step of a model with PyTorch (meta tensors, CPU): every tensor's "
    "size, life and category, every op's FLOPs and bytes. Needs PyTorch: "
    "pip install -e '.\\[trace]'",
    no_args_is_help=True,
)
Out = Annotated[Path, typer.Option("--out", help="trace file to write (.json.xz)")]
Case = Annotated[Path | None, typer.Option(help="also write the `offset` case (.csv)")]
Positive = Annotated[int, typer.Option(min=1)]
NEEDS_TORCH = (
    "memorace trace records with PyTorch, which is not installed: install the trace "
    "extra, pip install -e '.[trace]' (in a checkout: make .venv/.trace-installed)"
)


@app.command()
def train(
    out: Out,
    model: Annotated[str, typer.Option(help="gpt2-small | gpt2-medium | gpt2-xl | gpt2-tiny")],
    stages: Annotated[int, typer.Option(min=1, help="pipeline stages (at most the layers)")] = 1,
    stage: Annotated[int, typer.Option(min=0, help="the stage recorded, from 0")] = 0,
    micro_batches: Positive = 1,
    batch: Positive = 1,
    seq: Annotated[int, typer.Option(min=1, help="tokens, at most the model's context")] = 1024,
    ragged_seed: Annotated[int | None, typer.Option(help="seeded ragged lengths")] = None,
    case: Case = None,
) -> None:
    """A training step of one pipeline stage of GPT-2 (1F1B over the micro-batches, Adam)."""
    c = _config(GPT2, model)
    if stages > c.layers:
        raise typer.BadParameter(
            f"{model} has {c.layers} layers: at most that", param_hint="--stages"
        )
    if stage >= stages:
        raise typer.BadParameter(
            f"must be from 0 to {stages - 1}: --stages {stages}", param_hint="--stage"
        )
    if seq > c.context:
        raise typer.BadParameter(f"{model}'s context is {c.context} tokens", param_hint="--seq")
    _need_torch()
    from tracer.steps import TrainStep, record_train

    step = TrainStep(model, stages, stage, micro_batches, batch, seq, ragged_seed)
    _save(step, GPT2, record_train, out, case)


@app.command()
def serve(
    out: Out,
    model: Annotated[str, typer.Option(help="llama-8b | llama-1b | llama-tiny")],
    layout: Annotated[str, typer.Option(help="KV cache: growing | reserved")] = "growing",
    steps: Positive = 40,
    seed: int = 1,
    max_seqs: Positive = 16,
    arrivals: Annotated[float, typer.Option(min=0.0, help="new requests per step, mean")] = 1.0,
    prompt_mean: Positive = 512,
    output_mean: Positive = 64,
    warm: Annotated[int, typer.Option(min=0, help="requests running when the window opens")] = 0,
    kv_budget: Annotated[int, typer.Option(min=0, help="KV tokens admitted at once (0: any)")] = 0,
    case: Case = None,
) -> None:
    """Engine steps of a Llama server with continuous batching and a KV cache."""
    _config(LLAMA, model)
    if layout not in ("growing", "reserved"):
        raise typer.BadParameter("growing or reserved", param_hint="--layout")
    _need_torch()
    from tracer.steps import ServeWindow, record_serve

    w = ServeWindow(
        model,
        layout,
        steps,
        seed,
        max_seqs,
        arrivals,
        prompt_mean,
        output_mean,
        warm=warm,
        kv_budget=kv_budget,
    )
    _save(w, LLAMA, record_serve, out, case)


@app.command()
def vision(
    out: Out,
    model: Annotated[str, typer.Option(help="vit-small | vit-tiny")] = "vit-small",
    batch: Positive = 32,
    case: Case = None,
) -> None:
    """A training step of a ViT (Adam)."""
    _config(VIT, model)
    _need_torch()
    from tracer.steps import VisionStep, record_vision

    _save(VisionStep(model, batch), VIT, record_vision, out, case)


def _config(configs: dict[str, Any], model: str) -> Any:
    """The model's shape; checked before torch loads (tracer.configs needs none)."""
    if model not in configs:
        raise typer.BadParameter(f"one of {', '.join(configs)}", param_hint="--model")
    return configs[model]


def _need_torch() -> None:
    """A clear line, not a ModuleNotFoundError traceback, when the extra is missing.
    Called by each command once its arguments are checked, not in a group callback:
    that would run before `memorace trace train --help` too."""
    if importlib.util.find_spec("torch") is None:
        raise fail(NEEDS_TORCH, 1)


def _save(step: Any, configs: dict, record: Any, out: Path, case: Path | None) -> None:
    from dataclasses import asdict

    from tracer.steps import describe
    from tracer.trace_file import trace_doc, write_trace

    rec = record(step)
    command = "memorace " + shlex.join(sys.argv[1:])
    doc = trace_doc(rec, describe(step), asdict(configs[step.model]), command)
    size = write_trace(out, doc)
    tensors = len(doc["tensors"]["size"])
    typer.echo(
        f"{out}: {len(rec.ops)} ops, {tensors} tensors, {size} bytes, "
        f"recorded in {rec.seconds:.1f} s"
    )
    if case is not None:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "problems" / "_lib"))
        from timeline import write_csv
        from torchtrace import trace_buffers

        write_csv(case, trace_buffers(doc))
