"""`offload` plans (JSON): each tensor's uses split into residencies.

Parsing checks the shape (BAD_OUTPUT when it fails: not JSON, unknown, missing or
duplicate tensors, wrong field types); the rules are the verifier's."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from judge.csvtable import INT_LIMIT, read_bounded, show_cell
from judge.errors import PlanError
from judge.types.offload.case import OffloadCase
from judge.types.offload.jsonfile import load_json, show_value

NO_PREFETCH = -1


@dataclass(frozen=True)
class OffloadPlan:
    """One row per residency, grouped by tensor in case order."""

    tensor: np.ndarray  # int64 [R]: index of the tensor in the case
    index: np.ndarray  # int64 [R]: 0 for a tensor's first residency, 1, 2, ...
    offset: np.ndarray  # int64 [R]
    count: np.ndarray  # int64 [R]: how many of the tensor's uses it covers
    prefetch: np.ndarray  # int64 [R]: prefetch_after, NO_PREFETCH for first residencies

    def __len__(self) -> int:
        return len(self.tensor)


def plan_byte_limit(case: OffloadCase) -> int:
    return 4 * 2**20 + 200 * (len(case) + len(case.uses))


def read_plan(path: Path, case: OffloadCase) -> OffloadPlan:
    return parse_plan_bytes(read_bounded(path, plan_byte_limit(case), PlanError), path, case)


def parse_plan_bytes(data: bytes, path: Path | str, case: OffloadCase) -> OffloadPlan:
    return parse_plan(load_json(data, path, PlanError), path, case)


def parse_plan(raw: Any, path: Path | str, case: OffloadCase) -> OffloadPlan:
    def fail(message: str) -> PlanError:
        return PlanError(message, path)

    if not isinstance(raw, dict) or set(raw) != {"tensors"} or not isinstance(raw["tensors"], list):
        raise fail('a plan is one JSON object {"tensors": [...]}')
    index = {tid: i for i, tid in enumerate(case.ids)}
    rows: list[list[tuple[int, int, int, int]]] = [[] for _ in case.ids]
    seen = [False] * len(case.ids)
    for k, entry in enumerate(raw["tensors"]):
        tid = entry.get("id") if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or set(entry) != {"id", "residencies"}:
            raise fail(f'tensors[{k}] must be {{"id": ..., "residencies": [...]}}')
        if not isinstance(tid, str) or tid not in index:
            raise fail(f"tensors[{k}]: unknown tensor id {show_cell(str(tid))}")
        i = index[tid]
        if seen[i]:
            raise fail(f"tensor {tid} appears twice")
        seen[i] = True
        rows[i] = _residencies(entry["residencies"], tid, fail)
    missing = [tid for tid, s in zip(case.ids, seen, strict=True) if not s]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise fail(f"tensor {missing[0]}{more} missing from the plan")
    return _arrays(rows)


def _residencies(raw: Any, tid: str, fail: Any) -> list[tuple[int, int, int, int]]:
    if not isinstance(raw, list) or not raw:
        raise fail(f"tensor {tid}: residencies must be a non-empty list")
    out = []
    for r, res in enumerate(raw):
        where = f"residency {r + 1} of {tid}"
        allowed = {"offset", "uses"} if r == 0 else {"offset", "uses", "prefetch_after"}
        if not isinstance(res, dict) or not {"offset", "uses"} <= set(res) or set(res) - allowed:
            extra = " (the first residency has no prefetch_after)" if r == 0 else ""
            raise fail(
                f"{where} must have offset, uses{'' if r == 0 else ' and prefetch_after'}{extra}"
            )
        if r and "prefetch_after" not in res:
            raise fail(f"{where} needs prefetch_after: the step after which its copy-in is issued")
        offset = _int(res["offset"], f"{where}: offset", fail)
        count = _int(res["uses"], f"{where}: uses", fail)
        prefetch = (
            _int(res["prefetch_after"], f"{where}: prefetch_after", fail) if r else NO_PREFETCH
        )
        out.append((offset, count, prefetch, r))
    return out


def _int(value: Any, what: str, fail: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT_LIMIT:
        raise fail(f"{what} must be an integer from 0 to 2^62, not {show_value(value)}")
    return value


def _arrays(rows: list[list[tuple[int, int, int, int]]]) -> OffloadPlan:
    flat = [(i, *row) for i, tensor_rows in enumerate(rows) for row in tensor_rows]
    table = np.array(flat, dtype=np.int64).reshape(-1, 5)
    return OffloadPlan(
        tensor=table[:, 0],
        offset=table[:, 1],
        count=table[:, 2],
        prefetch=table[:, 3],
        index=table[:, 4],
    )
