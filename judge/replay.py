"""The replay verifier: prove a plan by executing it on real memory.

It allocates an arena, writes each buffer's (tensor's) signature into its cells
when it becomes live, checks the signature at every use, poisons memory when it
is released, and for `offload` moves the cells to host memory and back at each
residency change. The first corruption it meets is the verdict. One
implementation over an array module: numpy everywhere, cupy on a CUDA device.

The arena is in cells: sizes and offsets divided by their greatest common
divisor, or, when that is still too large, the distinct byte boundaries
(coordinate compression: two ranges share a cell exactly when they share a
byte). Alignment and capacity are checked in bytes, as an allocator would.

The replay shares no code with the exact verifier on purpose: each checks the
other, and a disagreement is a JUDGE_ERROR (judge.verifier).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MAX_CELLS = 2**27  # 512 MiB of uint32 cells
POISON = 0  # released memory; signatures are 1..n


@dataclass
class ReplayResult:
    ok: bool
    message: str
    backend: str
    cells: int = 0
    cell_bytes: int | str = 1  # bytes per cell, or "compressed"
    seconds: float = 0.0
    events: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


class Corruption(Exception):
    """The replay found memory that does not hold what the plan says it holds."""


def array_module(name: str = "auto") -> tuple[Any, str]:
    """(module, backend name): cupy when asked for or available with a device, else numpy."""
    if name in ("auto", "cupy"):
        try:
            import cupy

            if cupy.cuda.runtime.getDeviceCount() > 0:
                return cupy, "cupy"
        except Exception:
            if name == "cupy":
                raise
    return np, "numpy"


class Arena:
    """Cells of device memory; each placement maps to a slice of cells."""

    def __init__(self, xp: Any, capacity: int, starts: np.ndarray, ends: np.ndarray):
        self.xp = xp
        g = math.gcd(
            int(np.gcd.reduce(starts)) if len(starts) else 0,
            int(np.gcd.reduce(ends)) if len(ends) else 0,
        )
        g = g or 1
        if capacity // g + 1 <= MAX_CELLS:
            self.cell_bytes: int | str = g
            self._lo, self._hi = starts // g, ends // g
            cells = -(-capacity // g)
        else:
            bounds = np.unique(np.concatenate([starts, ends, [0, capacity]]))
            self.cell_bytes = "compressed"
            self._lo, self._hi = np.searchsorted(bounds, starts), np.searchsorted(bounds, ends)
            cells = len(bounds) - 1
        self.cells = int(cells)
        self.memory = xp.zeros(max(self.cells, 1), dtype=xp.uint32)

    def span(self, i: int) -> tuple[int, int]:
        return int(self._lo[i]), int(self._hi[i])

    def write(self, i: int, value: int) -> None:
        a, b = self.span(i)
        self.memory[a:b] = value

    def holds(self, i: int, value: int) -> int | None:
        """None when placement i holds `value` everywhere, else the value found first."""
        a, b = self.span(i)
        wrong = self.memory[a:b] != value
        if not bool(wrong.any()):
            return None
        return int(self.memory[a + int(self.xp.argmax(wrong))])


def _place_checks(capacity: int, start: int, size: int, alignment: int, name: str) -> None:
    if start % alignment:
        raise Corruption(f"{name} is placed at byte {start}, not aligned to {alignment}")
    if start + size > capacity:
        raise Corruption(
            f"{name} writes bytes [{start}, {start + size}) outside the {capacity}-byte arena"
        )


def _who(value: int, names: list[str]) -> str:
    return "released (poisoned) memory" if value == POISON else f"the data of {names[value - 1]}"


# --- offset -------------------------------------------------------------------------------------


def replay_offset(case: Any, plan: Any, xp: Any = np, backend: str = "numpy") -> ReplayResult:
    begin = time.perf_counter()
    offset, size = plan.offset, case.size
    arena = Arena(xp, case.capacity, offset, offset + size)
    n = len(case)
    times = np.concatenate([case.upper, case.lower])
    kind = np.repeat(np.array([0, 1]), n)  # ends (check, release) before starts at equal times
    order = np.lexsort((kind, times))
    result = ReplayResult(True, "", backend, arena.cells, arena.cell_bytes)
    try:
        for e in order.tolist():
            i = e % n
            name = f"buffer {case.ids[i]}"
            if e < n:
                found = arena.holds(i, i + 1)
                if found is not None:
                    raise Corruption(
                        f"{name} was overwritten before its end at time {int(case.upper[i])}: "
                        f"its memory holds {_who(found, case.ids)}"
                    )
                arena.write(i, POISON)
            else:
                _place_checks(
                    case.capacity, int(offset[i]), int(size[i]), int(case.alignment[i]), name
                )
                arena.write(i, i + 1)
            result.events += 1
    except Corruption as exc:
        result.ok, result.message = False, f"replay: {exc}"
    result.seconds = time.perf_counter() - begin
    return result


def replay(type_name: str, case: Any, plan: Any, backend: str = "numpy") -> ReplayResult:
    xp, name = array_module(backend) if backend != "numpy" else (np, "numpy")
    if type_name == "offset":
        return replay_offset(case, plan, xp, name)
    if type_name == "offload":
        from judge.replay_offload import replay_offload

        return replay_offload(case, plan, xp, name)
    if type_name == "online":  # a transcript is an offset plan of the answered requests
        from judge.types.online.verifier import offset_view

        if plan.answered < len(case):  # a run cut short: no replay proves it whole
            return ReplayResult(False, f"replay: {plan.answered} of {len(case)} answered", name)
        return replay_offset(*offset_view(case, plan), xp, name)
    return ReplayResult(True, f"no replay for problem type {type_name}", name)
