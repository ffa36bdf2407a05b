"""Type-independent plan checking: parse, verify and score one plan file."""

from __future__ import annotations

from pathlib import Path

from judge.errors import PlanError
from judge.types import ProblemType, Verification
from judge.verdict import Verdict


def check_plan(
    ptype: ProblemType,
    case: object,
    lower_bound: int,
    plan_path: Path,
    replay_backend: str | None = None,
) -> tuple[Verification, float]:
    """Verdict and score of the plan at `plan_path`; bad files become BAD_OUTPUT.

    With `replay_backend` ("numpy", "cupy", "auto") the plan is also executed on real
    memory (judge.replay); when the two verifiers disagree the verdict is JUDGE_ERROR."""
    try:
        plan = ptype.parse_plan(plan_path, case)
    except PlanError as exc:
        # Name the file as the contestant wrote it, not the judge's scratch path.
        shown = PlanError(exc.message, Path(exc.file).name if exc.file else None, exc.line)
        return Verification(Verdict.BAD_OUTPUT, str(shown)), 0.0
    verification = ptype.verify(case, plan)
    if replay_backend:
        verification = _cross_check(ptype, case, plan, verification, replay_backend)
    return verification, ptype.score(case, lower_bound, verification)


def _cross_check(
    ptype: ProblemType, case: object, plan: object, exact: Verification, backend: str
) -> Verification:
    from judge.replay import replay

    replayed = replay(ptype.name, case, plan, backend)
    if replayed.ok == (exact.verdict == Verdict.OK):
        return exact
    said = exact.message if exact.verdict != Verdict.OK else "valid"
    return Verification(
        Verdict.JUDGE_ERROR,
        f"the judge's two verifiers disagree (exact: {said}; {replayed.backend} replay: "
        f"{replayed.message or 'valid'}); this is the judge's fault and is reported",
        exact.peak,
        exact.makespan,
    )
