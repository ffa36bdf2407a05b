"""Rescoring: stored plans re-verified against a problem version's cases with its
current weights, as new `rescore` judgings; no planner runs."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from api import news
from api.actions.problems import package_of
from api.blobs import plan_file
from api.db.models import Case, CaseResultRow, Judging, ProblemVersion, Submission
from api.db.session import session_scope
from api.news import News
from api.settings import Settings
from judge.package import load_cases
from judge.verdict import Verdict
from judge.verifier import check_plan
from worker.results import finalize


def rescore_version(settings: Settings, version_id: int) -> int:
    """A new `rescore` judging for every judged submission of the version: stored plans
    re-verified against the cases, current weights applied; nothing is run."""
    with session_scope(settings.database_url) as db:
        version = db.get(ProblemVersion, version_id)
        if version is None:
            return 0
        package = package_of(settings, version)
        cases = {lc.spec.name: lc for lc in load_cases(package)}
        db_cases = {c.name: c for c in version.cases}
        subs = db.scalars(
            select(Submission).where(
                Submission.version_id == version_id, Submission.current_judging_id.is_not(None)
            )
        ).all()
        for sub in subs:
            old = db.get(Judging, sub.current_judging_id)
            if old is None:
                continue
            new = Judging(submission_id=sub.id, kind="rescore", status="running", attempt=1,
                          split=old.split)  # fmt: skip
            db.add(new)
            db.flush()
            for row in old.results:
                db.add(_rescored(settings, new.id, row, cases, db_cases, package.ptype))
            db.flush()
            db.refresh(new)
            finalize(db, new)
        if subs:  # boards and lists of every team moved: news that clears everything
            news.after_commit(db, News(0, board=True))
        return len(subs)


def _rescored(
    settings: Settings,
    judging_id: int,
    row: CaseResultRow,
    cases: dict[str, Any],
    db_cases: dict[str, Case],
    ptype: Any,
) -> CaseResultRow:
    spec = db_cases.get(row.case)
    copy = CaseResultRow(
        judging_id=judging_id, case=row.case, split=row.split,
        weight=spec.weight if spec else row.weight, verdict=row.verdict, message=row.message,
        peak=row.peak, lower_bound=row.lower_bound, score=row.score, time_s=row.time_s,
        memory_mb=row.memory_mb, plan_digest=row.plan_digest, log=row.log,
        makespan_us=row.makespan_us, request_us_mean=row.request_us_mean,
        request_us_p99=row.request_us_p99,
    )  # fmt: skip
    if _run_fault(ptype, row.verdict):
        return copy
    plan = plan_file(settings, row.plan_digest)
    lc = cases.get(row.case)
    if plan is not None and lc is not None and spec is not None:
        verification, score = check_plan(ptype, lc.case, spec.lower_bound, plan)
        copy.verdict, copy.message = str(verification.verdict), verification.message
        copy.peak, copy.score, copy.lower_bound = verification.peak, score, spec.lower_bound
        copy.makespan_us = verification.makespan
    return copy


def _run_fault(ptype: Any, verdict: str) -> bool:
    """Whether the stored verdict came from the run, not from its transcript: an
    interactive type keeps the answers of a run that timed out or crashed (judge.
    interactive), and re-verifying them alone would turn the fault into OK or
    INVALID_PLAN. Such a verdict stands; only OK and INVALID_PLAN are re-verified."""
    return bool(getattr(ptype, "interactive", False)) and verdict not in (
        str(Verdict.OK),
        str(Verdict.INVALID_PLAN),
    )
