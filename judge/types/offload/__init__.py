"""Problem type `offload`: device placement with host memory and timed transfers
(rules in README.md next to this file)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from judge.errors import NoPicture
from judge.types.base import Verification
from judge.types.offload.case import OffloadCase, read_case
from judge.types.offload.plan import OffloadPlan, read_plan
from judge.types.offload.verifier import lower_bound, verify
from judge.verdict import Verdict


class OffloadType:
    name = "offload"
    case_suffix = ".json"
    bound_unit = "µs"  # feasibility is checked by parse_case (each step's tensors must fit)
    plan_file = "plan.json"

    def parse_case(self, path: Path, capacity: int | None) -> OffloadCase:
        return read_case(path, capacity)

    def parse_plan(self, path: Path, case: OffloadCase) -> OffloadPlan:
        return read_plan(path, case)

    def verify(self, case: OffloadCase, plan: OffloadPlan) -> Verification:
        return verify(case, plan)

    def lower_bound(self, case: OffloadCase) -> int:
        return lower_bound(case)

    def score(self, case: OffloadCase, lower_bound: int, verification: Verification) -> float:
        """Compute time over makespan: 1.0 when no step ever waits."""
        if verification.verdict != Verdict.OK or not verification.makespan:
            return 0.0 if verification.verdict != Verdict.OK else 1.0
        return min(1.0, lower_bound / verification.makespan)

    def write_planner_input(
        self, case: OffloadCase, directory: Path, limits: dict[str, Any]
    ) -> None:
        body = {"type": self.name, **limits, **case.as_json()}
        (directory / "case.json").write_text(json.dumps(body, separators=(",", ":")) + "\n")

    def picture(self, case: OffloadCase, plan: OffloadPlan, lower_bound: int) -> str:
        """The timeline of steps, stalls and copies, and device bytes in use; only a
        valid plan has a timing to draw."""
        from judge.pictures.timeline import timeline_svg
        from judge.types.offload.verifier import simulate

        checked = verify(case, plan)
        if checked.verdict != Verdict.OK:
            raise NoPicture(f"only a valid plan has a timeline to draw: {checked.message}")
        return timeline_svg(case, plan, simulate(case, plan))


OFFLOAD = OffloadType()
