"""Benchmark: `memorace problem import-torch` of a generated ~50 MB profiler Chrome trace
and a ~50 MB CUDA snapshot, `--type offset` against `--type online`: wall time of the
whole import (read, convert, write, validate the package) and of the online reader alone,
wall and CPU time (on a shared machine the CPU time is the steadier figure).
Prints figures; asserts nothing about time.

    python benchmarks/import_torch_online.py [--mb 50]

The files imitate training steps: each op allocates outputs (addresses reused as a
caching allocator does) and frees older tensors; snapshot entries carry frame lists
of shared frame dicts, as PyTorch writes them.
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from judge.torch_import.online import import_torch_online, read_recordings
from judge.torch_import.package import import_torch


def steps(rng: random.Random) -> Iterator[tuple[str, int, int]]:
    """("op", index, 0), ("alloc", addr, size) and ("free", addr, size), endlessly."""
    live: list[tuple[int, int]] = []
    free_addrs: list[int] = []
    top, op = 0, 0
    while True:
        yield "op", op, 0
        op += 1
        for _ in range(rng.randint(1, 2)):
            size = 512 * rng.randint(1, 4096)
            addr = free_addrs.pop() if free_addrs and rng.random() < 0.8 else (top := top + 2**22)
            live.append((addr, size))
            yield "alloc", addr, size
        while len(live) > 200 or (live and rng.random() < 0.45):
            addr, size = live.pop(rng.randrange(len(live)))
            free_addrs.append(addr)
            yield "free", addr, size


def chrome_trace(mb: int) -> bytes:
    rng, events, size, ts = random.Random(1), [], 0, 0.0
    for kind, a, b in steps(rng):
        if kind == "op":
            if size > mb * 2**20:
                break
            ev: dict[str, Any] = {"ph": "X", "cat": "cpu_op", "name": f"aten::op{a % 50}",
                                  "pid": 1, "tid": 1, "ts": ts, "dur": 5.0,
                                  "args": {"Ev Idx": a}}  # fmt: skip
            ts += 0.5
        else:
            nbytes = b if kind == "alloc" else -b
            args = {"Total Reserved": 0, "Total Allocated": 0, "Bytes": nbytes,
                    "Device Id": 0, "Device Type": 1, "Addr": a, "Ev Idx": len(events)}  # fmt: skip
            ev = {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",
                  "pid": 1, "tid": 1, "ts": ts, "args": args}  # fmt: skip
            ts += 0.5
        events.append(ev)
        size += 215
    return json.dumps({"traceEvents": events}).encode()


def snapshot(mb: int) -> bytes:
    rng = random.Random(2)
    frames = [{"filename": f"/m/layer{i}.py", "line": i, "name": f"forward{i}"} for i in range(40)]
    cpp = [{"filename": "", "line": 0, "name": f"at::_ops::op{i}::call(at::Tensor const&)"}
           for i in range(20)]  # fmt: skip
    trace, size, op = [], 0, 0
    for kind, a, b in steps(rng):
        if kind == "op":
            op = a
            if size > mb * 2**20:
                break
            continue
        stack = [cpp[op % 20], cpp[(op + 1) % 20], *frames[op % 30 : op % 30 + 10]]
        actions = ["alloc"] if kind == "alloc" else ["free_requested", "free_completed"]
        for action in actions:
            trace.append({"action": action, "addr": a, "size": b, "stream": 0,
                          "frames": stack, "time_us": len(trace)})  # fmt: skip
            size += 57
    return pickle.dumps({"segments": [], "device_traces": [trace]}, protocol=4)


def timed(label: str, fn: Callable[[], Any]) -> Any:
    start, cpu = time.perf_counter(), time.process_time()
    out = fn()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"  {label:32s} {wall:7.2f} s wall {cpu:7.2f} s CPU")
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=50)
    mb = parser.parse_args().mb
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in (("trace.json", chrome_trace), ("snap.pickle", snapshot)):
            path = Path(tmp) / name
            path.write_bytes(make(mb))
            print(f"{name}: {path.stat().st_size / 2**20:.1f} MiB")
            recs = timed("online reader alone", lambda p=path: read_recordings(p))
            for device, rec in recs[1].items():
                print(f"  {device}: {len(rec.events):,} events")
            timed(
                "import --type offset", lambda p=path: import_torch([p], Path(tmp), f"off-{p.stem}")
            )
            timed(
                "import --type online",
                lambda p=path: import_torch_online([p], Path(tmp), f"on-{p.stem}"),
            )
            events = sum(1 for _ in (Path(tmp) / f"on-{path.stem}").rglob("*.events"))
            print(f"  online package: {events} case(s)")


if __name__ == "__main__":
    main()
