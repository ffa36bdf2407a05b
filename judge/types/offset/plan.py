"""The `offset` plan: one offset per buffer, read strictly (BAD_OUTPUT otherwise)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from judge.csvtable import INT_LIMIT, parse_id_table, read_bounded, show_cell
from judge.errors import PlanError
from judge.types.offset.case import OffsetCase

PLAN_COLUMNS = ("id", "offset")


@dataclass(frozen=True, eq=False)
class OffsetPlan:
    offset: np.ndarray  # int64, aligned with the case's rows


def plan_byte_limit(case: OffsetCase) -> int:
    """Room for every id with a 20-digit offset, twice over; refuses 1 GB files early."""
    return 2**20 + 2 * (case.id_chars() + 24 * len(case))


def read_plan(path: Path, case: OffsetCase) -> OffsetPlan:
    data = read_bounded(path, plan_byte_limit(case), PlanError)
    return parse_plan_bytes(data, path, case)


def parse_plan_bytes(data: bytes, path: Path | str, case: OffsetCase) -> OffsetPlan:
    table = parse_id_table(data, path, PLAN_COLUMNS, (), {"offset": (0, INT_LIMIT)}, PlanError)
    offsets = table.ints["offset"]
    if table.id_column == case.ids:  # planners often keep the input order: no strings made
        return OffsetPlan(offsets)
    rows = rows_of_ids(table.ids, case, str(path))
    plan = np.empty(len(case), dtype=np.int64)
    plan[rows] = offsets
    return OffsetPlan(plan)


def rows_of_ids(ids: list[str], case: OffsetCase, path: str) -> np.ndarray:
    """The case's row of each of `ids` (a plan's, in its order); PlanError naming the
    first unknown, repeated or missing id."""
    if ids == case.ids:  # planners often keep the input order: a C-speed comparison
        return np.arange(len(ids), dtype=np.int64)
    index = case.index()
    rows = np.fromiter((index.get(b, -1) for b in ids), dtype=np.int64, count=len(ids))
    unknown = np.flatnonzero(rows < 0)
    if unknown.size:
        i = int(unknown[0])
        raise PlanError(f"unknown buffer id {show_cell(ids[i])}", path, i + 2)
    counts = np.bincount(rows, minlength=len(case))
    if (counts > 1).any():
        dup = int(np.flatnonzero(counts > 1)[0])
        lines = (np.flatnonzero(rows == dup) + 2).tolist()
        raise PlanError(f"buffer {case.ids[dup]} appears more than once", path, lines[1])
    missing = np.flatnonzero(counts == 0)
    if missing.size:
        names = ", ".join(case.ids[i] for i in missing[:5].tolist())
        more = f" and {missing.size - 5} more" if missing.size > 5 else ""
        raise PlanError(f"{missing.size} buffer(s) have no offset: {names}{more}", path)
    return rows
