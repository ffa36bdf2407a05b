"""`memorace problem import-torch`: snapshots and profiler traces into an `offset` package."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from judge.errors import CaseError, PackageError
from judge.importer import (
    build_package,
    check_files,
    check_hidden,
    check_options,
    write_offset_package,
)
from judge.package import CASE_NAME, Problem
from judge.torch_import import chrome, memtrace
from judge.torch_import.compressed import read_input
from judge.torch_import.lifetimes import Buffers
from judge.torch_import.snapshot import load_snapshot, snapshot_buffers
from judge.types.offset.case import parse_case_bytes
from judge.types.offset.verifier import lower_bound

MIB = 2**20
KINDS = {
    "snapshot": "a CUDA memory snapshot (`torch.cuda.memory._dump_snapshot`)",
    "chrome": "a `torch.profiler` Chrome trace (`profile_memory=True`)",
    "trace": "a `memorace trace` recording (tracer/TRACE_FORMAT.md)",
}


def load_torch_file(path: Path) -> tuple[str, Any, int]:
    """(kind, the loaded document, its bytes) of a file, plain, gzip or xz: a pickle
    starts with its protocol opcode (0x80), a trace with JSON; a JSON object whose
    `format` is `memorace-torch-trace` is what `memorace trace` wrote."""
    return load_torch_data(read_input(path), path)


def load_torch_data(data: bytes, path: Path | str) -> tuple[str, Any, int]:
    """load_torch_file of bytes already decompressed (read_input's)."""
    head = data[:64].lstrip()
    if head[:1] == b"\x80":
        return "snapshot", load_snapshot(data, path), len(data)
    if head[:1] in (b"{", b"["):
        doc = chrome._parse(data, path)
        return ("trace" if memtrace.is_memorace_trace(doc) else "chrome"), doc, len(data)
    raise CaseError(
        "neither a memory snapshot (pickle) nor a profiler trace or `memorace trace` file "
        "(JSON), plain or compressed with gzip or xz",
        path,
    )


def read_torch_file(path: Path) -> tuple[str, dict[str, Buffers]]:
    kind, doc, size = load_torch_file(path)
    if kind == "snapshot":
        return kind, snapshot_buffers(doc, path, size)
    reader = memtrace.trace_buffers if kind == "trace" else chrome.trace_buffers
    return kind, reader(doc, path)


def capacity_for(bound: int) -> int:
    """The shipped problems' rule: 25 % above the lower bound, rounded up to a MiB."""
    return -(-(bound * 5 // 4 + 1) // MIB) * MIB


def import_torch(
    files: list[Path],
    dest_root: Path,
    slug: str,
    capacity: int | None = None,
    alignment: int = 512,
    hidden: frozenset[str] = frozenset(),
) -> tuple[Problem, list[str]]:
    """Write `dest_root/slug`, one case per file and device; also the notes on what
    was guessed (allocations cut off by the recording's start or end)."""
    check_options(slug, dest_root, capacity)
    read = [(f, *read_torch_file(f)) for f in check_files(files, dest_root)]
    notes: list[str] = []

    def fill(staging: Path) -> None:
        cases, lines = [], []
        for path, kind, per_device in read:
            for device, bufs in per_device.items():
                if not len(bufs):
                    continue
                name = _case_name(path, device, len(per_device))
                spec, line = _write_case(staging, name, bufs, capacity, alignment, hidden)
                cases.append(spec)
                lines.append(f"- `{name}`: {line}, from `{path.name}`, {KINDS[kind]}")
                notes.extend(f"{name}: {n} {what}" for what, n in sorted(bufs.guessed.items()))
        if not cases:
            raise PackageError("the files hold no allocations", files[0])
        check_hidden(hidden, [str(c["name"]) for c in cases])
        text = "Recorded by PyTorch; imported with `memorace problem import-torch`:\n\n"
        text += "\n".join(lines) + "\n\n" + _RULES
        write_offset_package(staging, slug, "recorded by PyTorch", cases, text)

    return build_package(dest_root, slug, fill), notes


_RULES = """Time is the position of an allocator event in the recording of its device.
A block freed in the recording but allocated before it started lives from time 0;
one still allocated when the recording stopped lives to the end."""


def _case_name(path: Path, device: str, devices: int) -> str:
    stem = path.name.split(".")[0]
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", stem).strip("-._")[:80] or "case"
    name = name if devices == 1 else f"{name}-{device}"
    if not CASE_NAME.fullmatch(name):
        raise PackageError(f"cannot make a case name from {path.name}", path)
    return name


def _write_case(
    staging: Path,
    name: str,
    bufs: Buffers,
    capacity: int | None,
    alignment: int,
    hidden: frozenset[str],
) -> tuple[dict[str, object], str]:
    split = "hidden" if name in hidden else "public"
    text = bufs.csv(alignment)
    dest = staging / "data" / split / f"{name}.csv"
    dest.parent.mkdir(parents=True, exist_ok=True)
    if (dest).exists():
        raise PackageError(f"two files make the case name {name}; rename one", dest)
    dest.write_text(text)
    bound = lower_bound(parse_case_bytes(text.encode(), dest, 2**62))
    cap = capacity if capacity is not None else capacity_for(bound)
    spec = {"name": name, "split": split, "capacity": cap, "weight": 1.0}
    return spec, f"{len(bufs)} buffers, lower bound {bound} bytes"
