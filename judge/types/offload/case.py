"""`offload` cases: steps with compute durations, tensors with their uses (JSON)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from judge.csvtable import INT_LIMIT, read_bounded
from judge.errors import CaseError
from judge.types.offload.jsonfile import load_json, show_value

CASE_BYTE_LIMIT = 512 * 2**20
SIZE_LIMIT = 2**48  # 256 TiB: sums of a step's tensors stay far inside int64
_ID = re.compile(r"[A-Za-z0-9._:-]{1,100}")
_KEYS = {"capacity", "h2d_bandwidth", "d2h_bandwidth", "steps", "tensors"}
_TENSOR_KEYS = {"id", "size", "alignment", "uses"}


@dataclass(frozen=True)
class OffloadCase:
    capacity: int
    h2d: int  # bytes per µs
    d2h: int
    steps: np.ndarray  # int64 [T], µs
    ids: list[str]
    size: np.ndarray  # int64 [n]
    alignment: np.ndarray  # int64 [n]
    use_start: np.ndarray  # int64 [n+1]: tensor i's uses are uses[use_start[i]:use_start[i+1]]
    uses: np.ndarray  # int64, sorted within each tensor

    def __len__(self) -> int:
        return len(self.ids)

    def uses_of(self, i: int) -> np.ndarray:
        return self.uses[self.use_start[i] : self.use_start[i + 1]]

    def as_json(self) -> dict[str, Any]:
        return {
            "capacity": self.capacity,
            "h2d_bandwidth": self.h2d,
            "d2h_bandwidth": self.d2h,
            "steps": self.steps.tolist(),
            "tensors": [
                {
                    "id": tid,
                    "size": int(self.size[i]),
                    "alignment": int(self.alignment[i]),
                    "uses": self.uses_of(i).tolist(),
                }
                for i, tid in enumerate(self.ids)
            ],
        }


def read_case(path: Path, capacity: int | None) -> OffloadCase:
    return parse_case_bytes(read_bounded(path, CASE_BYTE_LIMIT, CaseError), path, capacity)


def parse_case_bytes(data: bytes, path: Path | str, capacity: int | None) -> OffloadCase:
    return parse_case(load_json(data, path, CaseError), path, capacity)


def parse_case(raw: Any, path: Path | str, capacity: int | None) -> OffloadCase:
    def fail(message: str) -> CaseError:
        return CaseError(message, path)

    if not isinstance(raw, dict):
        raise fail("a case is one JSON object")
    missing, unknown = _KEYS - raw.keys(), raw.keys() - _KEYS
    if missing or unknown:
        raise fail(f"keys: missing {sorted(missing)}, unknown {sorted(unknown)}")
    cap = _int(raw["capacity"], "capacity", 0, fail)
    if capacity is not None and cap != capacity:
        raise fail(f"capacity {cap} differs from the package's capacity {capacity}")
    h2d = _int(raw["h2d_bandwidth"], "h2d_bandwidth", 1, fail)
    d2h = _int(raw["d2h_bandwidth"], "d2h_bandwidth", 1, fail)
    if not isinstance(raw["steps"], list):
        raise fail("steps must be a list of durations in µs")
    steps = [_int(d, f"steps[{s}]", 0, fail) for s, d in enumerate(raw["steps"])]
    _check_total_time(steps, fail)
    tensors = raw["tensors"]
    if not isinstance(tensors, list):
        raise fail("tensors must be a list")
    ids, sizes, aligns, starts, uses = _tensors(tensors, len(steps), fail)
    case = OffloadCase(
        cap, h2d, d2h, np.array(steps, dtype=np.int64), ids,
        np.array(sizes, dtype=np.int64), np.array(aligns, dtype=np.int64),
        np.array(starts, dtype=np.int64), np.array(uses, dtype=np.int64),
    )  # fmt: skip
    _check_feasible(case, fail)
    return case


Columns = tuple[list[str], list[int], list[int], list[int], list[int]]


def _tensors(tensors: list[Any], n_steps: int, fail: Any) -> Columns:
    ids: list[str] = []
    seen: set[str] = set()
    sizes, aligns, starts, uses = [], [], [0], []
    for k, t in enumerate(tensors):
        where = f"tensors[{k}]"
        if not isinstance(t, dict) or set(t) != _TENSOR_KEYS:
            raise fail(f"{where} must have exactly the keys {sorted(_TENSOR_KEYS)}")
        tid = t["id"]
        if not isinstance(tid, str) or not _ID.fullmatch(tid):
            raise fail(f"{where}: id must match [A-Za-z0-9._:-]{{1,100}}")
        if tid in seen:
            raise fail(f"{where}: duplicate id {tid}")
        seen.add(tid)
        sizes.append(_int(t["size"], f"{tid}.size", 1, fail, SIZE_LIMIT))
        aligns.append(_int(t["alignment"], f"{tid}.alignment", 1, fail))
        own = t["uses"]
        if not isinstance(own, list) or not own:
            raise fail(f"tensor {tid}: uses must be a non-empty list of steps")
        own = [_int(u, f"{tid}.uses", 0, fail) for u in own]
        if any(b <= a for a, b in pairwise(own)) or own[-1] >= n_steps:
            raise fail(f"tensor {tid}: uses must be sorted, distinct steps in 0..{n_steps - 1}")
        ids.append(tid)
        uses += own
        starts.append(len(uses))
    return ids, sizes, aligns, starts, uses


def _int(value: Any, what: str, low: int, fail: Any, high: int = INT_LIMIT) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        top = "2^48" if high == SIZE_LIMIT else "2^62"
        raise fail(f"{what} must be an integer from {low} to {top}, not {show_value(value)}")
    return value


def _check_total_time(steps: list[int], fail: Any) -> None:
    """Scores are sum(steps) / makespan: a case without compute time would score
    every plan 0 (or divide by zero), so it is refused; the sum must stay exact."""
    total = sum(steps)
    if total == 0:
        raise fail(
            "the steps last 0 µs in all: at least one step must take time, "
            "or every plan would score 0"
        )
    if total > INT_LIMIT:
        raise fail(f"the steps last {total} µs in all; at most 2^62 allowed")


def _check_feasible(case: OffloadCase, fail: Any) -> None:
    """Every step's own tensors must fit together, or no plan exists."""
    if not len(case):
        return
    per_use = np.repeat(case.size, np.diff(case.use_start))
    if int(case.size.max()) * len(per_use) >= 2**63:  # int64 sums could wrap: exact ints
        per_use = per_use.astype(object)
    order = np.argsort(case.uses, kind="stable")
    steps, first = np.unique(case.uses[order], return_index=True)
    need = np.add.reduceat(per_use[order], first)
    k = int(np.argmax(need))
    worst, exact = int(steps[k]), int(need[k])
    if exact > case.capacity:
        raise fail(
            f"infeasible: step {worst} uses tensors of {exact} bytes in all, "
            f"more than the capacity {case.capacity}"
        )
