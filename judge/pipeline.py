"""The judging pipeline: one function that judges a planner against a problem.

Build once, run every case, verify each plan outside the planner's process,
report each case result through a callback as it is produced.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge.package import LoadedCase, Problem, load_cases
from judge.runner import BuildError, Planner, fresh_dirs, prepare_planner, run_planner
from judge.scoring import CaseResult, totals
from judge.verdict import Verdict
from judge.verifier import check_plan

OnResult = Callable[[CaseResult], None]


@dataclass
class JudgeReport:
    problem: str
    planner: str
    results: list[CaseResult] = field(default_factory=list)
    build_error: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "problem": self.problem,
            "planner": self.planner,
            "build_error": self.build_error,
            "cases": [r.as_dict() for r in self.results],
            **totals(self.results),
        }


def judge_planner(
    problem: Problem,
    source: Path,
    split: str = "all",
    on_result: OnResult | None = None,
    time_limit_s: float | None = None,
) -> JudgeReport:
    report = JudgeReport(problem.slug, Path(source).name)
    cases = load_cases(problem, split)
    try:
        planner = prepare_planner(source)
    except BuildError as exc:
        report.build_error = str(exc)
        for lc in cases:
            report.results.append(_failed(lc, Verdict.BUILD_ERROR, "the planner did not build"))
        return report
    limit = time_limit_s or problem.limits.time_limit_s
    with tempfile.TemporaryDirectory(prefix="memorace-") as scratch:
        for lc in cases:
            result = judge_case(problem, lc, planner, Path(scratch), limit)
            report.results.append(result)
            if on_result:
                on_result(result)
    return report


def judge_case(
    problem: Problem, lc: LoadedCase, planner: Planner, scratch: Path, time_limit_s: float
) -> CaseResult:
    ptype = problem.ptype
    case_dir, out_dir = fresh_dirs(scratch)
    limits = {**problem.limits.as_dict(), "time_limit_s": time_limit_s, "name": lc.spec.name}
    ptype.write_planner_input(lc.case, case_dir, limits)
    run = run_planner(planner, case_dir, out_dir, time_limit_s)
    if run.timed_out:
        return _failed(lc, Verdict.TIME_LIMIT, f"no plan after {time_limit_s:g} s", run.log)
    if run.exit_code != 0:
        what = f"killed by signal {-run.exit_code}" if run.exit_code < 0 else "exited"
        message = f"{what} with status {run.exit_code}" if run.exit_code > 0 else what
        return _failed(lc, Verdict.RUNTIME_ERROR, f"the planner {message}", run.log)
    plan_path = out_dir / ptype.plan_file
    verification, score = check_plan(ptype, lc.case, lc.lower_bound, plan_path)
    return CaseResult(
        case=lc.spec.name,
        split=lc.spec.split,
        weight=lc.spec.weight,
        verdict=verification.verdict,
        message=verification.message,
        lower_bound=lc.lower_bound,
        peak=verification.peak,
        score=score,
        time_s=round(run.time_s, 3),
        plan_digest=_digest(plan_path),
        log=run.log,
    )


def _failed(lc: LoadedCase, verdict: Verdict, message: str, log: str = "") -> CaseResult:
    return CaseResult(
        lc.spec.name, lc.spec.split, lc.spec.weight, verdict, message, lc.lower_bound, log=log
    )


def _digest(path: Path) -> str | None:
    if not path.is_file():
        return None
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
