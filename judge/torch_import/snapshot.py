"""A PyTorch CUDA memory snapshot (`torch.cuda.memory._dump_snapshot`), read as data.

The file is a pickle of plain dicts, lists, strings and numbers (PyTorch's
"Understanding CUDA Memory Usage" page documents it): `segments` (the allocator's
cudaMalloc'd segments with their `blocks`, as at the end) and `device_traces` (one list
per device of entries with `action`, `addr`, `size`, `stream`, `frames`). A pickle can
name any Python callable and have it called while loading; this reader's unpickler
(datapickle) refuses every global, so such a file is rejected before anything runs.
A pickle can also refer to one object many times through its memo: the entries read
are counted after that sharing, against a limit that grows with the file's size.

Buffers: `alloc` opens one, `free_completed` (the block is back in the allocator) ends
it, or `free_requested` (older traces: `free`) when no completion follows. Segment
events (`segment_alloc`, `segment_free`, ...) are the allocator's own and are skipped.
"""

from __future__ import annotations

import pickle
from collections import Counter
from pathlib import Path
from typing import Any

from judge.errors import CaseError, show_value
from judge.torch_import.compressed import read_input
from judge.torch_import.datapickle import load_data
from judge.torch_import.lifetimes import ALLOC, FREE, Buffers, Event, buffers_from_events

MAX_SNAPSHOT_BYTES = 512 * 2**20
MAX_DEVICES = 1024
_SKIPPED = frozenset(
    {"segment_alloc", "segment_free", "segment_map", "segment_unmap", "snapshot", "oom"}
)
_FREES = frozenset({"free_requested", "free_completed", "free"})


def read_snapshot(path: Path) -> dict[str, Buffers]:
    """Buffers per device ("cuda0", ...) of a snapshot file."""
    data = read_input(path, MAX_SNAPSHOT_BYTES)
    return snapshot_buffers(load_snapshot(data, path), path, len(data))


def load_snapshot(data: bytes, path: Path | str) -> dict[str, Any]:
    try:
        doc = load_data(data)
    except pickle.UnpicklingError as exc:
        raise CaseError(f"not a memory snapshot: {exc}", path) from None
    except Exception as exc:  # any other way a pickle can be broken (memo, stack, opcodes)
        what = type(exc).__name__
        raise CaseError(f"not a memory snapshot (a broken pickle: {what})", path) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("device_traces"), list):
        raise CaseError("not a memory snapshot: no 'device_traces' list at the top", path)
    return doc


def visit_limit(size: int) -> int:
    """Trace entries and blocks a file of `size` bytes may make the reader visit.

    A pickle refers to an object it built before in two bytes (its memo), so a few MB can
    hold a list of a million entries that every device's trace shares: visits are counted
    as the reader makes them, after that sharing. An entry or block the reader accepts
    takes at least 5 bytes of its own, so a file of distinct entries never reaches this."""
    return size // 4 + 10_000


class _Budget:
    """Counts visits (a list's length before walking it) and refuses the file past the
    limit, naming the object it shares most."""

    def __init__(self, doc: dict[str, Any], size: int, path: Path | str):
        self.doc, self.size, self.path = doc, size, path
        self.left = self.limit = visit_limit(size)

    def spend(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            times, what = most_shared(self.doc)
            raise CaseError(
                f"the snapshot refers to one object {times:,} times ({what}): reading it "
                f"would visit over {self.limit:,} entries, the limit for a file of "
                f"{self.size:,} bytes (PyTorch writes each entry once); refused",
                self.path,
            )


def snapshot_buffers(doc: dict[str, Any], path: Path | str, size: int) -> dict[str, Buffers]:
    """Buffers per device of a loaded snapshot of `size` bytes (that bounds the work)."""
    traces = doc["device_traces"]
    if len(traces) > MAX_DEVICES:
        raise CaseError(f"{len(traces)} device traces; at most {MAX_DEVICES}", path)
    budget = _Budget(doc, size, path)
    held = _held_blocks(doc.get("segments", []), path, budget)
    out = {}
    for device, trace in enumerate(traces):
        where = f"device_traces[{device}]"
        events = _events(_list(trace, where, path, budget), where, path)
        if events or held.get(device):
            out[f"cuda{device}"] = buffers_from_events(events, held.get(device, {}))
    return out


def most_shared(doc: dict[str, Any]) -> tuple[int, str]:
    """How often the most referred-to object of the walked lists is referred to, and
    where. Each distinct list is counted once: work linear in the file."""
    best: tuple[int, str] = (1, "none shared")
    seen: set[int] = set()

    def count(items: list[Any], where: str) -> None:
        nonlocal best
        if id(items) in seen or not items:
            return
        seen.add(id(items))
        obj, times = Counter(map(id, items)).most_common(1)[0]
        if times > best[0]:
            kind = next(type(x).__name__ for x in items if id(x) == obj)
            best = (times, f"a {kind} in {where}")

    traces = doc["device_traces"]
    count(traces, "device_traces")
    for device, trace in enumerate(traces):
        if isinstance(trace, list):
            count(trace, f"device_traces[{device}]")
    segments = doc.get("segments")
    if isinstance(segments, list):
        count(segments, "segments")
        blocks = [s["blocks"] for s in segments if isinstance(s, dict) and "blocks" in s]
        count(blocks, "the segments' 'blocks'")
        for s, listed in enumerate(blocks):
            if isinstance(listed, list):
                count(listed, f"segments[{s}].blocks")
    return best


def _events(trace: list[Any], where: str, path: Path | str) -> list[Event]:
    return [event for _, event in indexed_events(trace, where, path)]


def indexed_events(trace: list[Any], where: str, path: Path | str) -> list[tuple[int, Event]]:
    """The alloc and free actions, checked, each with its index in the trace (the online
    importer takes the allocation's hints from that entry)."""
    entries = []
    for i, entry in enumerate(trace):
        at = f"{where}[{i}]"
        action = _field(entry, "action", str, at, path)
        if action in _SKIPPED:
            continue
        if action != "alloc" and action not in _FREES:
            raise CaseError(f"{at}: unknown action {show_value(action)}", path)
        addr, size = _field(entry, "addr", int, at, path), _field(entry, "size", int, at, path)
        if addr < 0 or size < 0 or (action == "alloc" and size == 0):
            raise CaseError(f"{at}: addr and size must be >= 0 (size > 0 to alloc)", path)
        entries.append((i, action, addr, size))
    return _merge_frees(entries)


def _merge_frees(entries: list[tuple[int, str, int, int]]) -> list[tuple[int, Event]]:
    """A request that a completion follows is dropped: the completion is the free."""
    completed: set[int] = set()  # positions of requests a completion follows
    pending: dict[int, int] = {}  # addr: position of its latest request
    for k, (_, action, addr, _) in enumerate(entries):
        if action == "free_requested":
            pending[addr] = k
        elif action == "free_completed" and addr in pending:
            completed.add(pending.pop(addr))
        elif action == "alloc":
            pending.pop(addr, None)
    return [
        (i, Event(ALLOC if action == "alloc" else FREE, addr, size))
        for k, (i, action, addr, size) in enumerate(entries)
        if k not in completed
    ]


def _held_blocks(segments: Any, path: Path | str, budget: _Budget) -> dict[int, dict[int, int]]:
    """Per device, the blocks allocated when the snapshot was taken (address: size)."""
    held: dict[int, dict[int, int]] = {}
    for s, seg in enumerate(_list(segments, "segments", path, budget)):
        at = f"segments[{s}]"
        _field(seg, "blocks", list, at, path)
        device = _field(seg, "device", int, at, path) if "device" in seg else 0
        blocks = _list(seg["blocks"], f"{at}.blocks", path, budget)
        for b, block in enumerate(blocks):
            bat = f"{at}.blocks[{b}]"
            state = _field(block, "state", str, bat, path)
            if state in ("active_allocated", "active_pending_free"):
                addr = _field(block, "address", int, bat, path)
                held.setdefault(device, {})[addr] = _field(block, "size", int, bat, path)
    return held


def _list(value: Any, where: str, path: Path | str, budget: _Budget) -> list[Any]:
    if not isinstance(value, list):
        raise CaseError(f"{where} must be a list, got {type(value).__name__}", path)
    budget.spend(len(value))
    return value


def _field(entry: Any, key: str, kind: type, where: str, path: Path | str) -> Any:
    if not isinstance(entry, dict):
        raise CaseError(f"{where} must be a dict, got {type(entry).__name__}", path)
    value = entry.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise CaseError(f"{where}: '{key}' must be {kind.__name__}, got {_show(value)}", path)
    # Addresses and sizes are 64-bit: a longer integer is hashed again at every use (one
    # shared through the memo by millions of entries costs their count times its length).
    if kind is int and not 0 <= value < 2**64:
        raise CaseError(f"{where}: '{key}' is not a 64-bit address or size", path)
    return value


def _show(value: Any) -> str:
    """Containers by kind only: their repr could nest too deeply, or expand the memo's
    sharing exponentially (a list holding the same list twice, 60 levels deep)."""
    if isinstance(value, list | tuple | dict | bytearray):
        return f"a {type(value).__name__} of {len(value):,} items"
    return show_value(value)
