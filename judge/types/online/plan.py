"""The `online` transcript: `id,offset` rows, as the judge writes them or any `offset` plan.

Two shapes are read: the judge's own, the first k requests in request order (a run
that broke a rule or stopped keeps its answers up to the last one), and any `offset`
plan of the whole trace (every request once, in any order).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from judge.csvtable import INT_LIMIT, parse_id_table, read_bounded
from judge.errors import PlanError
from judge.types.offset.plan import PLAN_COLUMNS, rows_of_ids
from judge.types.online.case import OnlineCase


@dataclass(frozen=True, eq=False)
class Transcript:
    offset: np.ndarray  # int64, for requests 0..answered-1 (request order)

    @property
    def answered(self) -> int:
        return len(self.offset)


def byte_limit(case: OnlineCase) -> int:
    return 2**20 + 2 * sum(len(b) + 24 for b in case.ids)


def read_transcript(path: Path, case: OnlineCase) -> Transcript:
    data = read_bounded(path, byte_limit(case), PlanError)
    return parse_transcript_bytes(data, path, case)


def parse_transcript_bytes(data: bytes, path: Path | str, case: OnlineCase) -> Transcript:
    table = parse_id_table(data, path, PLAN_COLUMNS, (), {"offset": (0, INT_LIMIT)}, PlanError)
    offsets = table.ints["offset"]
    if table.ids == case.ids[: len(table.ids)]:
        return Transcript(offsets)
    rows = rows_of_ids(table.ids, case, str(path))  # type: ignore[arg-type]  # same columns
    plan = np.empty(len(case), dtype=np.int64)
    plan[rows] = offsets
    return Transcript(plan)


def transcript_csv(case: OnlineCase, answers: list[int]) -> str:
    rows = "".join(f"{bid},{off}\n" for bid, off in zip(case.ids, answers, strict=False))
    return "id,offset\n" + rows
