"""PyTorch's memory files as request streams for the `online` importer: per device, the
allocator events in the order the offset importer uses, each with the hints an allocator
could know when the request came.

Hints (values are printable ASCII without spaces, at most 128 characters, '-' unknown):

- a snapshot gives `function` (the innermost Python frame of the alloc's stack, as
  `file.py:name`), `op` (the innermost ATen operator among its C++ frames, as
  `aten::NAME`; stacks recorded with `stacks="all"` have them) and `stream`;
- a profiler trace gives `op` (the innermost `X` event of the same thread whose span
  holds the alloc's time) and `category` (that event's `cat`, e.g. `cpu_op`).

Nothing is taken from a free: a block freed in the recording but allocated before it
started has only what belongs to the block itself (a snapshot's stream).

The same limits as the offset path hold: a snapshot's entries, blocks and frame lists
are counted after the pickle memo's sharing (a frame list or frame shared by many
entries is read once), integers past 64 bits are refused, strings are cut before any other work.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge.errors import CaseError
from judge.torch_import.chrome import _memory_event, _parse
from judge.torch_import.compressed import read_input
from judge.torch_import.lifetimes import ALLOC, Event
from judge.torch_import.snapshot import (
    MAX_DEVICES,
    MAX_SNAPSHOT_BYTES,
    _Budget,
    _field,
    _list,
    indexed_events,
    load_snapshot,
)

SNAPSHOT_HINTS = ("function", "op", "stream")
CHROME_HINTS = ("op", "category")
MAX_VALUE = 128
MAX_FRAMES = 256  # frames looked at per stack: the innermost Python one is near the top
UNKNOWN = "-"
_NOT_PRINTABLE = re.compile(r"[^!-~]+")
_ATEN_OP = re.compile(r"at::_ops::([A-Za-z0-9_]+)::")

Hints = tuple[str, ...]


@dataclass
class Recording:
    """One device: `events[i]` with `hints[i]` (for a free, the hints a block allocated
    before the recording gets), and the blocks held at the end (address: size, hints)."""

    hint_names: Hints
    events: list[Event] = field(default_factory=list)
    hints: list[Hints] = field(default_factory=list)
    held: dict[int, tuple[int, Hints]] = field(default_factory=dict)


def hint_value(value: Any) -> str:
    """A string as a hint value: cut first (a shared 100 MB name costs 128 characters),
    spaces and other unprintables as '_'."""
    if not isinstance(value, str):
        return UNKNOWN
    return _NOT_PRINTABLE.sub("_", value[:MAX_VALUE])[:MAX_VALUE] or UNKNOWN


def _number_hint(value: Any) -> str:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**64
    return str(value) if ok else UNKNOWN


# CUDA memory snapshots


def read_snapshot_recordings(path: Path) -> dict[str, Recording]:
    data = read_input(path, MAX_SNAPSHOT_BYTES)
    return snapshot_recordings(load_snapshot(data, path), path, len(data))


def snapshot_recordings(doc: dict[str, Any], path: Path | str, size: int) -> dict[str, Recording]:
    traces = doc["device_traces"]
    if len(traces) > MAX_DEVICES:
        raise CaseError(f"{len(traces)} device traces; at most {MAX_DEVICES}", path)
    budget = _Budget(doc, size, path)
    stacks = _Stacks()
    held = _held(doc.get("segments", []), path, budget, stacks)
    out = {}
    for device, trace in enumerate(traces):
        where = f"device_traces[{device}]"
        entries = _list(trace, where, path, budget)
        rec = Recording(SNAPSHOT_HINTS, held=held.get(device, {}))
        for i, event in indexed_events(entries, where, path):
            entry = entries[i]
            stream = _number_hint(entry.get("stream"))
            if event.kind == ALLOC:
                rec.hints.append((*stacks.hints(entry.get("frames")), stream))
            else:
                rec.hints.append((UNKNOWN, UNKNOWN, stream))
            rec.events.append(event)
        if rec.events or rec.held:
            out[f"cuda{device}"] = rec
    return out


class _Stacks:
    """(function, op) of a frame list. Each distinct list and frame is read once (the
    memo can share them), a list's first MAX_FRAMES frames and a name's first 256
    characters: the work is bounded by the file's own bytes."""

    def __init__(self) -> None:
        self.lists: dict[int, tuple[str, str]] = {}
        self.frames: dict[int, tuple[str, str]] = {}  # id: (function or '', op or '')

    def hints(self, frames: Any) -> tuple[str, str]:
        if not isinstance(frames, list):
            return UNKNOWN, UNKNOWN
        known = self.lists.get(id(frames))
        if known is None:
            known = self.lists[id(frames)] = self._read(frames[:MAX_FRAMES])
        return known

    def _read(self, frames: list[Any]) -> tuple[str, str]:
        op = ""
        for frame in frames:  # innermost first, as PyTorch records them
            got = self.frames.get(id(frame))
            if got is None:
                got = self.frames[id(frame)] = _frame(frame)
            function, op = got[0], op or got[1]
            if function:  # the ops below the innermost Python frame are ones it called
                return function, op or UNKNOWN
        return UNKNOWN, op or UNKNOWN


def _frame(frame: Any) -> tuple[str, str]:
    """(`file.py:name` if a Python frame, `aten::NAME` if an operator's C++ frame)."""
    if not isinstance(frame, dict) or not isinstance(name := frame.get("name"), str):
        return "", ""
    filename = frame.get("filename")
    if isinstance(filename, str) and filename[-3:] == ".py":
        base = filename[-MAX_VALUE:].rsplit("/", 1)[-1]
        return hint_value(f"{base}:{name[:MAX_VALUE]}"), ""
    match = _ATEN_OP.search(name[:256])
    return "", hint_value(f"aten::{match[1]}") if match else ""


def _held(
    segments: Any, path: Path | str, budget: _Budget, stacks: _Stacks
) -> dict[int, dict[int, tuple[int, Hints]]]:
    """As snapshot._held_blocks, with each block's hints (its frames, its segment's stream)."""
    held: dict[int, dict[int, tuple[int, Hints]]] = {}
    for s, seg in enumerate(_list(segments, "segments", path, budget)):
        at = f"segments[{s}]"
        _field(seg, "blocks", list, at, path)
        device = _field(seg, "device", int, at, path) if "device" in seg else 0
        stream = _number_hint(seg.get("stream"))
        for b, block in enumerate(_list(seg["blocks"], f"{at}.blocks", path, budget)):
            bat = f"{at}.blocks[{b}]"
            state = _field(block, "state", str, bat, path)
            if state in ("active_allocated", "active_pending_free"):
                addr = _field(block, "address", int, bat, path)
                size = _field(block, "size", int, bat, path)
                hints = (*stacks.hints(block.get("frames")), stream)
                held.setdefault(device, {})[addr] = (size, hints)
    return held


# Profiler Chrome traces


def read_chrome_recordings(path: Path) -> dict[str, Recording]:
    data = read_input(path)
    return chrome_recordings(_parse(data, path), path)


def chrome_recordings(doc: Any, path: Path | str) -> dict[str, Recording]:
    """Memory events in chrome.trace_buffers' order (time, then event index, then file
    order), each with the innermost op of its thread that spans its time."""
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise CaseError("not a profiler trace: no 'traceEvents' list", path)
    per_device: dict[str, list[tuple[int | float, int, Event, Any]]] = {}
    spans: dict[Any, list[tuple[int | float, int | float, int]]] = {}
    for i, ev in enumerate(events):
        if not isinstance(ev, dict):
            continue
        if ev.get("name") == "[memory]":
            device, order, event = _memory_event(ev, f"traceEvents[{i}]", path)
            if event is not None:
                per_device.setdefault(device, []).append((*order, event, _thread(ev)))
        elif ev.get("ph") == "X" and (span := _span(ev)) is not None:
            spans.setdefault(_thread(ev), []).append((*span, i))
    if not per_device:
        raise CaseError("no [memory] events: record with profile_memory=True", path)
    out = {}
    for device, rows in sorted(per_device.items()):
        rows.sort(key=lambda r: r[:2])
        rec = out[device] = Recording(CHROME_HINTS)
        rec.events = [r[2] for r in rows]
        enclosing = _enclosing(rows, spans)
        for k, event in enumerate(rec.events):
            op = events[enclosing[k]] if event.kind == ALLOC and enclosing[k] >= 0 else {}
            rec.hints.append((hint_value(op.get("name")), hint_value(op.get("cat"))))
    return out


def _thread(ev: dict[str, Any]) -> tuple[Any, Any]:
    """(pid, tid) when they are plain numbers or strings (a key must hash cheaply)."""
    ok = (str, int)
    pid, tid = ev.get("pid"), ev.get("tid")
    return (pid if isinstance(pid, ok) else None, tid if isinstance(tid, ok) else None)


def _span(ev: dict[str, Any]) -> tuple[int | float, int | float] | None:
    ts, dur = ev.get("ts"), ev.get("dur")
    for v in (ts, dur):
        if not isinstance(v, int | float) or isinstance(v, bool):
            return None
        if isinstance(v, float) and not math.isfinite(v):
            return None
    if dur < 0:
        return None
    return ts, ts + dur


def _enclosing(
    rows: list[tuple[int | float, int, Event, Any]],
    spans: dict[Any, list[tuple[int | float, int | float, int]]],
) -> list[int]:
    """Per memory event, the trace index of the latest-starting span of its thread that
    holds its time (the innermost when spans nest), or -1. One sweep per thread."""
    found = [-1] * len(rows)
    by_thread: dict[Any, list[int]] = {}
    for k, row in enumerate(rows):
        by_thread.setdefault(row[3], []).append(k)
    for thread, ks in by_thread.items():
        opens = sorted(spans.get(thread, []), key=lambda s: (s[0], -s[1]))
        stack: list[tuple[int | float, int]] = []  # (end, index), starts increasing
        j = 0
        for k in sorted(ks, key=lambda k: rows[k][0]):
            ts = rows[k][0]
            while j < len(opens) and opens[j][0] <= ts:
                stack.append((opens[j][1], opens[j][2]))
                j += 1
            while stack and stack[-1][0] < ts:
                stack.pop()
            found[k] = stack[-1][1] if stack else -1
    return found
