"""`memorace trace`: record one step of a model (the `trace` extra: PyTorch)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

app = typer.Typer(
    help="Record one step of a model with PyTorch (meta tensors, CPU): every tensor's "
    "size, life and category, every op's FLOPs and bytes. Needs PyTorch: "
    "pip install -e '.\\[trace]'",
    no_args_is_help=True,
)
Out = Annotated[Path, typer.Option("--out", help="trace file to write (.json.xz)")]
Case = Annotated[Path | None, typer.Option(help="also write the `offset` case (.csv)")]


@app.command()
def train(
    out: Out,
    model: Annotated[str, typer.Option(help="gpt2-small | gpt2-medium | gpt2-xl | gpt2-tiny")],
    stages: int = 1,
    stage: int = 0,
    micro_batches: int = 1,
    batch: int = 1,
    seq: int = 1024,
    ragged_seed: Annotated[int | None, typer.Option(help="seeded ragged lengths")] = None,
    case: Case = None,
) -> None:
    """A training step of one pipeline stage of GPT-2 (1F1B over the micro-batches, Adam)."""
    from tracer.models import GPT2
    from tracer.steps import TrainStep, record_train

    step = TrainStep(model, stages, stage, micro_batches, batch, seq, ragged_seed)
    _save(step, GPT2, record_train, out, case)


@app.command()
def serve(
    out: Out,
    model: Annotated[str, typer.Option(help="llama-8b | llama-1b | llama-tiny")],
    layout: Annotated[str, typer.Option(help="KV cache: growing | reserved")] = "growing",
    steps: int = 40,
    seed: int = 1,
    max_seqs: int = 16,
    arrivals: float = 1.0,
    prompt_mean: int = 512,
    output_mean: int = 64,
    warm: Annotated[int, typer.Option(help="requests running when the window opens")] = 0,
    kv_budget: Annotated[int, typer.Option(help="KV tokens admitted at once (0: any)")] = 0,
    case: Case = None,
) -> None:
    """Engine steps of a Llama server with continuous batching and a KV cache."""
    from tracer.models import LLAMA
    from tracer.steps import ServeWindow, record_serve

    if layout not in ("growing", "reserved"):
        raise typer.BadParameter("growing or reserved", param_hint="--layout")
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
    batch: int = 32,
    case: Case = None,
) -> None:
    """A training step of a ViT (Adam)."""
    from tracer.models import VIT
    from tracer.steps import VisionStep, record_vision

    _save(VisionStep(model, batch), VIT, record_vision, out, case)


def _save(step: Any, configs: dict, record: Any, out: Path, case: Path | None) -> None:
    from dataclasses import asdict

    from tracer.steps import describe
    from tracer.trace_file import trace_doc, write_trace

    if step.model not in configs:
        raise typer.BadParameter(f"one of {', '.join(configs)}", param_hint="--model")
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
