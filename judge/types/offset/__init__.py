"""Problem type `offset`: static placement, the MiniMalloc formulation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from judge.csvtable import INT_LIMIT
from judge.types.base import Verification
from judge.types.offset.case import OffsetCase, case_csv, read_case
from judge.types.offset.plan import OffsetPlan, read_plan
from judge.types.offset.verifier import ends, lower_bound, verify
from judge.verdict import Verdict


class OffsetType:
    name = "offset"
    case_suffix = ".csv"
    bound_unit = "bytes"
    plan_file = "plan.csv"

    def parse_case(self, path: Path, capacity: int | None) -> OffsetCase:
        return read_case(path, INT_LIMIT if capacity is None else capacity)

    def parse_plan(self, path: Path, case: OffsetCase) -> OffsetPlan:
        return read_plan(path, case)

    def verify(self, case: OffsetCase, plan: OffsetPlan) -> Verification:
        return verify(case, plan)

    def lower_bound(self, case: OffsetCase) -> int:
        return lower_bound(case)

    def score(self, case: OffsetCase, lower_bound: int, verification: Verification) -> float:
        if verification.verdict != Verdict.OK:
            return 0.0
        peak = verification.peak or 0
        return 1.0 if peak == 0 else lower_bound / peak

    def write_planner_input(
        self, case: OffsetCase, directory: Path, limits: dict[str, Any]
    ) -> None:
        meta = {"type": self.name, "capacity": case.capacity, "buffers": len(case), **limits}
        (directory / "case.json").write_text(json.dumps(meta, indent=2) + "\n")
        (directory / "buffers.csv").write_text(case_csv(case))

    def picture(self, case: OffsetCase, plan: OffsetPlan, lower_bound: int) -> str:
        """Buffers as rectangles in time x address; capacity, peak and bound marked."""
        from judge.pictures.placement import plan_svg

        peak = int(ends(plan.offset, case.size).max()) if len(case) else 0
        return plan_svg(
            case.lower, case.upper, case.size, plan.offset, case.capacity, peak, lower_bound,
            ids=case.ids,
        )  # fmt: skip


OFFSET = OffsetType()
