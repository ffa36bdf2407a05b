"""Type-independent plan checking: parse, verify and score one plan file."""

from __future__ import annotations

from pathlib import Path

from judge.errors import PlanError
from judge.types import ProblemType, Verification
from judge.verdict import Verdict


def check_plan(
    ptype: ProblemType, case: object, lower_bound: int, plan_path: Path
) -> tuple[Verification, float]:
    """Verdict and score of the plan at `plan_path`; bad files become BAD_OUTPUT."""
    try:
        plan = ptype.parse_plan(plan_path, case)
    except PlanError as exc:
        # Name the file as the contestant wrote it, not the judge's scratch path.
        shown = PlanError(exc.message, Path(exc.file).name if exc.file else None, exc.line)
        return Verification(Verdict.BAD_OUTPUT, str(shown)), 0.0
    verification = ptype.verify(case, plan)
    return verification, ptype.score(case, lower_bound, verification)
