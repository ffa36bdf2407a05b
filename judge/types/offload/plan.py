"""`offload` plans (JSON): each tensor's uses split into residencies.

Parsing checks the shape (BAD_OUTPUT when it fails: not JSON, unknown, missing or
duplicate tensors, wrong field types, fields that the residency's way in does not
take); the rules are the verifier's."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from judge.csvtable import INT_LIMIT, read_bounded, show_cell
from judge.errors import PlanError
from judge.types.offload.case import DEVICE, OffloadCase
from judge.types.offload.jsonfile import key_problem, load_json, present, show_value

NO_STEP = -2  # a step field the residency does not have (-1 is "before step 0")
NO_PREFETCH = NO_STEP
# How a residency comes in (plan.mode)
PRODUCED, COPIED, RECOMPUTED = 0, 1, 2
# How a non-final residency leaves (plan.out); NO_OUT for last residencies
OUT_NAMES = {"copy": 0, "compressed": 1, "nvme": 2, "drop": 3}
OUT_COPY, OUT_COMPRESSED, OUT_NVME, OUT_DROP = 0, 1, 2, 3
NO_OUT = -1
_NEEDED = ("offset", "uses")
_MAY = ("in", "prefetch_after", "decode_before", "recompute_before", "out", "priority")
_FIELDS, _NEEDED_SET = frozenset(_NEEDED + _MAY), frozenset(_NEEDED)
_ENTRY = ("id", "residencies")
_ENTRY_KEYS = frozenset(_ENTRY)


@dataclass(frozen=True)
class OffloadPlan:
    """One row per residency, grouped by tensor in case order."""

    tensor: np.ndarray  # int64 [R]: index of the tensor in the case
    index: np.ndarray  # int64 [R]: 0 for a tensor's first residency, 1, 2, ...
    offset: np.ndarray  # int64 [R]
    count: np.ndarray  # int64 [R]: how many of the tensor's uses it covers
    prefetch: np.ndarray  # int64 [R]: prefetch_after (-1: before step 0), NO_STEP if none
    mode: np.ndarray | None = None  # int64 [R]: PRODUCED / COPIED / RECOMPUTED
    at: np.ndarray | None = None  # int64 [R]: recompute_before or decode_before, NO_STEP
    out: np.ndarray | None = None  # int64 [R]: OUT_* code, NO_OUT when not given
    priority: np.ndarray | None = None  # int64 [R]

    def __len__(self) -> int:
        return len(self.tensor)


def plan_byte_limit(case: OffloadCase) -> int:
    return 4 * 2**20 + 300 * (len(case) + len(case.uses))


def read_plan(path: Path, case: OffloadCase) -> OffloadPlan:
    return parse_plan_bytes(read_bounded(path, plan_byte_limit(case), PlanError), path, case)


def parse_plan_bytes(data: bytes, path: Path | str, case: OffloadCase) -> OffloadPlan:
    return parse_plan(load_json(data, path, PlanError), path, case)


Row = tuple[
    int, int, int, int, int, int, int, int
]  # offset, count, prefetch, k, mode, at, out, prio


def parse_plan(raw: Any, path: Path | str, case: OffloadCase) -> OffloadPlan:
    def fail(message: str) -> PlanError:
        return PlanError(message, path)

    problem = key_problem(raw, ("tensors",), ()) if isinstance(raw, dict) else "is not one"
    if problem or not isinstance(raw["tensors"], list):
        problem = problem or "has tensors that are not a list"
        raise fail(f'a plan is one JSON object {{"tensors": [...]}}; it {problem}')
    index = {tid: i for i, tid in enumerate(case.ids)}
    starts = case.start_tier().tolist()
    rows: list[list[Row]] = [[] for _ in case.ids]
    seen = [False] * len(case.ids)
    for k, entry in enumerate(raw["tensors"]):
        tid = entry.get("id") if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or entry.keys() != _ENTRY_KEYS:
            problem = key_problem(entry, _ENTRY, ()) if isinstance(entry, dict) else "is not one"
            raise fail(f'tensors[{k}] must be {{"id": ..., "residencies": [...]}}; it {problem}')
        if not isinstance(tid, str) or tid not in index:
            raise fail(f"tensors[{k}]: unknown tensor id {show_cell(str(tid))}")
        i = index[tid]
        if seen[i]:
            raise fail(f"tensor {tid} appears twice")
        seen[i] = True
        rows[i] = _residencies(entry["residencies"], tid, starts[i] == DEVICE, fail)
    missing = [tid for tid, s in zip(case.ids, seen, strict=True) if not s]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise fail(f"tensor {missing[0]}{more} missing from the plan")
    return _arrays(rows)


def _residencies(raw: Any, tid: str, produced: bool, fail: Any) -> list[Row]:
    if not isinstance(raw, list) or not raw:
        raise fail(f"tensor {tid}: residencies must be a non-empty list")
    return [_residency(res, f"residency {r + 1} of {tid}", r, produced and r == 0, fail)
            for r, res in enumerate(raw)]  # fmt: skip


_COMMON = {"offset", "uses", "out", "priority"}
_TAKES = {  # the fields each way in takes, and why the others are refused
    PRODUCED: (_COMMON, " (the first residency has no prefetch_after: its first use produces it)"),
    COPIED: (_COMMON | {"in", "prefetch_after", "decode_before"}, ""),
    RECOMPUTED: (
        _COMMON | {"in", "recompute_before"},
        " (a recomputed residency is not copied in)",
    ),
}


def _residency(res: Any, where: str, r: int, produced: bool, fail: Any) -> Row:
    if not isinstance(res, dict):
        raise fail(f"{where} is not an object")
    if None in res.values():  # null: absent (present() would cost a call per residency)
        res = present(res, _MAY)
    if not _NEEDED_SET <= res.keys() <= _FIELDS:
        raise fail(
            f"{where} {key_problem(res, _NEEDED, _MAY)} (a residency has "
            f"{', '.join(_NEEDED)}; optionally {', '.join(_MAY)})"
        )
    how = res.get("in", "copy")
    if how not in ("copy", "recompute"):
        raise fail(f'{where}: in must be "copy" or "recompute", not {show_value(how)}')
    mode = PRODUCED if produced else COPIED if how == "copy" else RECOMPUTED
    takes, why = _TAKES[mode]
    if set(res) - takes:
        raise fail(f"{where} has {sorted(set(res) - takes)[0]}, which it does not take{why}")
    if mode == COPIED and "prefetch_after" not in res:
        raise fail(f"{where} needs prefetch_after: the step after which its copy-in is issued")
    if mode == RECOMPUTED and "recompute_before" not in res:
        raise fail(f"{where} needs recompute_before: the step it is recomputed before")
    out = res.get("out")
    if out is not None and out not in OUT_NAMES:
        raise fail(f"{where}: out must be one of {', '.join(OUT_NAMES)}, not {show_value(out)}")
    at_key = "recompute_before" if mode == RECOMPUTED else "decode_before"
    return (
        _int(res["offset"], f"{where}: offset", fail),
        _int(res["uses"], f"{where}: uses", fail),
        _step(res, "prefetch_after", where, fail, -1),
        r,
        mode,
        _step(res, at_key, where, fail, 0),
        NO_OUT if out is None else OUT_NAMES[out],
        _int(res.get("priority", 0), f"{where}: priority", fail),
    )


def _step(res: dict[str, Any], key: str, where: str, fail: Any, low: int) -> int:
    return _int(res[key], f"{where}: {key}", fail, low) if key in res else NO_STEP


def _int(value: Any, what: str, fail: Any, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= INT_LIMIT:
        raise fail(f"{what} must be an integer from {low} to 2^62, not {show_value(value)}")
    return value


def _arrays(rows: list[list[Row]]) -> OffloadPlan:
    flat = [(i, *row) for i, tensor_rows in enumerate(rows) for row in tensor_rows]
    table = np.array(flat, dtype=np.int64).reshape(-1, 9)
    return OffloadPlan(
        tensor=table[:, 0],
        offset=table[:, 1],
        count=table[:, 2],
        prefetch=table[:, 3],
        index=table[:, 4],
        mode=table[:, 5],
        at=table[:, 6],
        out=table[:, 7],
        priority=table[:, 8],
    )
