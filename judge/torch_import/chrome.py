"""A `torch.profiler` Chrome trace (`export_chrome_trace`, recorded with
`profile_memory=True`): its `[memory]` instant events, read as plain JSON.

Each memory event's `args` hold `Addr`, `Bytes` (negative on a free), `Device Type`
(0 CPU, 1 CUDA, as in c10's DeviceType), `Device Id` and `Ev Idx`. Events are taken in
time order (`ts`, then `Ev Idx`); one case per device.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from judge.errors import CaseError, show_value
from judge.torch_import.compressed import MAX_INPUT_BYTES, read_input
from judge.torch_import.lifetimes import ALLOC, FREE, Buffers, Event, buffers_from_events

MAX_TRACE_BYTES = MAX_INPUT_BYTES  # also once decompressed (gzip: `.pt.trace.json.gz`)
_DEVICE_TYPES = {0: "cpu", 1: "cuda"}


def read_chrome_trace(path: Path) -> dict[str, Buffers]:
    """Buffers per device ("cpu", "cuda0", ...) of a profiler trace file."""
    data = read_input(path)
    return trace_buffers(_parse(data, path), path)


def _parse(data: bytes, path: Path | str) -> Any:
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CaseError(f"not JSON: {exc}", path) from None
    except ValueError:  # an integer too long for int()
        raise CaseError("not a profiler trace: a number has too many digits", path) from None
    except RecursionError:
        raise CaseError("not a profiler trace: nested too deeply", path) from None


def trace_buffers(doc: Any, path: Path | str) -> dict[str, Buffers]:
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise CaseError("not a profiler trace: no 'traceEvents' list", path)
    per_device: dict[str, list[tuple[int | float, int, Event]]] = {}
    for i, ev in enumerate(events):
        if isinstance(ev, dict) and ev.get("name") == "[memory]":
            device, order, event = _memory_event(ev, f"traceEvents[{i}]", path)
            if event is not None:
                per_device.setdefault(device, []).append((*order, event))
    if not per_device:
        raise CaseError("no [memory] events: record with profile_memory=True", path)
    return {
        device: buffers_from_events([e for _, _, e in sorted(rows, key=lambda r: r[:2])])
        for device, rows in sorted(per_device.items())
    }


def _memory_event(
    ev: dict[str, Any], where: str, path: Path | str
) -> tuple[str, tuple[int | float, int], Event | None]:
    args = ev.get("args")
    if not isinstance(args, dict):
        raise CaseError(f"{where}: a [memory] event needs an 'args' object", path)
    addr, nbytes = _int(args, "Addr", where, path), _int(args, "Bytes", where, path)
    dtype, did = _int(args, "Device Type", where, path), _int(args, "Device Id", where, path)
    ts = ev.get("ts", 0)
    if not isinstance(ts, int | float) or isinstance(ts, bool) or ts != ts:
        raise CaseError(f"{where}: 'ts' must be a number, got {show_value(ts)}", path)
    index = _int(args, "Ev Idx", where, path) if "Ev Idx" in args else 0
    name = _DEVICE_TYPES.get(dtype, f"dev{dtype}")
    device = name if did < 0 or name == "cpu" else f"{name}{did}"
    if addr < 0:
        raise CaseError(f"{where}: 'Addr' must be >= 0, got {show_value(addr)}", path)
    event = None if nbytes == 0 else Event(ALLOC if nbytes > 0 else FREE, addr, abs(nbytes))
    return device, (ts, index), event


def _int(args: dict[str, Any], key: str, where: str, path: Path | str) -> int:
    value = args.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise CaseError(f"{where}: '{key}' must be an integer, got {show_value(value)}", path)
    return value
