"""Read the traces `memorace trace` records (tracer/TRACE_FORMAT.md) without PyTorch and
turn them into `offset` buffers for the generators (standard library only).

A tensor's life is [lower, upper) in aten-op indices of the recorded step; its id
says what it is: category, the op that made it (or `pre` for what existed before
the step: weights, optimizer state) and its index in the trace, e.g.
`activation.bmm.1234`."""

from __future__ import annotations

import json
import lzma
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from hidden import Draw, hidden_args, materialize, vary_trace
from timeline import Buffer, capacity_for, csv_text, write_package

FORMAT = "memorace-torch-trace"
ALIGNMENT = 512  # the CUDA caching allocator's granularity


def read_trace(path) -> dict:
    with open(path, "rb") as f:
        doc = json.loads(lzma.decompress(f.read()))
    if doc.get("format") != FORMAT or doc.get("version") != 1:
        raise ValueError(f"{path}: not a version-1 {FORMAT} file")
    return doc


def trace_buffers(doc: dict, skip: tuple[str, ...] = ()) -> list[Buffer]:
    """Every recorded tensor storage as a buffer, in the trace's order, but those of
    the categories in `skip`."""
    t, names, cats = doc["tensors"], doc["op_names"], doc["categories"]
    op_name = doc["ops"]["name"]
    bufs = []
    rows = zip(t["size"], t["lower"], t["upper"], t["op"], t["category"], strict=True)
    for i, (size, lower, upper, op, cat) in enumerate(rows):
        if cats[cat] in skip:
            continue
        made_by = names[op_name[op]] if op >= 0 else "pre"
        buf = Buffer(f"{cats[cat]}.{made_by}.{i}", lower, size, ALIGNMENT, upper)
        bufs.append(buf)
    return bufs


@dataclass(frozen=True)
class TraceCase:
    """A case recorded by `memorace trace <args>` into <generator>/traces/<name>.json.xz."""

    name: str
    split: str
    args: tuple[str, ...]
    weight: float = 1.0


def trace_path(generator: Path, case: TraceCase) -> Path:
    return generator / "traces" / f"{case.name}.json.xz"


def record(generator: Path, cases: list[TraceCase], only: set[str] | None = None) -> None:
    """Record the traces again (needs the trace extra: PyTorch); `memorace` from the
    running interpreter's environment."""
    memorace = Path(sys.executable).with_name("memorace")
    root = generator.resolve().parents[2]  # paths in the traces' provenance: from here
    for case in cases:
        if only is None or case.name in only:
            out = trace_path(generator.resolve(), case).relative_to(root)
            argv = [str(memorace), "trace", *case.args, "--out", str(out)]
            subprocess.run(argv, check=True, cwd=root)


def offset_main(
    here: Path,
    title: str,
    limits: dict,
    traces: list[TraceCase],
    weights: tuple[float, ...],
    argv: list[str],
    skip: tuple[str, ...] = (),
    version: int = 2,
) -> None:
    """An `offset` generator's command line. No arguments (or case names): rewrite the
    repository's package (the public split) from the public traces. `--record`: record
    the traces again (PyTorch). `--hidden-seed FILE --out DIR`: the package plus a
    hidden split of len(weights) cases made from the seed, each a variation
    (hidden.vary_trace) of a trace of `traces` (public and pool alike), into DIR."""
    package = here.parent
    public = [c for c in traces if c.split == "public"]
    if (args := hidden_args(argv)) is not None:

        def make(base: TraceCase, draw: Draw) -> tuple[str, str, int]:
            bufs = trace_buffers(vary_trace(read_trace(trace_path(here, base)), draw), skip)
            return ".csv", csv_text(bufs), capacity_for(bufs)

        materialize(package, args.out, args.seed, traces, weights, make)
        return
    names = {a for a in argv[1:] if a != "--record"} or None
    if "--record" in argv:
        record(here, traces, names)
        return

    def build(case: TraceCase) -> list[Buffer]:
        return trace_buffers(read_trace(trace_path(here, case)), skip)

    write_package(package, title, limits, public, build, names, version=version)
