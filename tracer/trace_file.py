"""Write a Recording as a trace file (TRACE_FORMAT.md): JSON, xz-compressed, byte for
byte the same for the same recording (sorted keys, no timestamps)."""

from __future__ import annotations

import json
import lzma
import platform
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # write_trace needs no torch: the importer's tests write traces with it
    from tracer.record import Recording

FORMAT = "memorace-torch-trace"
VERSION = 1


def trace_doc(rec: Recording, step: dict[str, Any], config: dict[str, Any], command: str) -> dict:
    import torch

    from tracer.record import CATEGORIES

    names = sorted({name for name, _, _ in rec.ops})
    index = {n: i for i, n in enumerate(names)}
    kept = [s for s in rec.storages if s.size > 0 and s.upper > s.lower]
    return {
        "format": FORMAT,
        "version": VERSION,
        "provenance": {
            "torch": torch.__version__,
            "python": platform.python_version(),
            "device": "meta (true sizes, no data; lifetimes from PyTorch's own refcounts)",
            "step": step,
            "model_config": config,
            "command": command,
        },
        "categories": list(CATEGORIES),
        "op_names": names,
        "ops": {
            "name": [index[n] for n, _, _ in rec.ops],
            "flops": [f for _, f, _ in rec.ops],
            "bytes": [b for _, _, b in rec.ops],
        },
        "tensors": {
            "size": [s.size for s in kept],
            "lower": [s.lower for s in kept],
            "upper": [s.upper for s in kept],
            "op": [s.op for s in kept],
            "category": [CATEGORIES.index(s.category) for s in kept],
            "reads": [s.reads for s in kept],
            "writes": [s.writes for s in kept],
        },
    }


def write_trace(path: Path, doc: dict) -> int:
    """Write `doc` to `path` (.json.xz); returns the compressed size in bytes."""
    text = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    data = lzma.compress(text, preset=9 | lzma.PRESET_EXTREME)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_bytes(data)
    return len(data)
