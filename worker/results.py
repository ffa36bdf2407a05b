"""A judging's results in the database: each case's row stored once, under the
attempt that owns the judging, and the judging made final when the last one is in.

Every (re)start of a judging bumps its `attempt`; each write checks it, so a
redelivered or duplicated task never mixes its results with another attempt's,
and the unique (judging, case) key means no case is ever stored twice, even when
two processes judged the same case (a helper taken for dead that was only slow).
"""

from __future__ import annotations

import logging

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from api import news
from api.db.models import JUDGING_UNDERWAY, CaseResultRow, Judging, utcnow
from api.db.session import session_scope
from api.news import News
from judge.scoring import CaseResult, problem_score, totals
from judge.verdict import Verdict

log = logging.getLogger("memorace.worker")


class Superseded(Exception):
    """This attempt no longer owns its judging (reaped, rejudged or taken over)."""


def add_line(reason: str, line: str) -> str:
    return f"{reason}\n{line}".strip()


def owned(db: Session, judging_id: int, attempt: int) -> Judging:
    """The judging, while `attempt` runs it; the check is a write (its heartbeat), so that
    it holds until the transaction ends on SQLite too (no row locks there: a read-only
    check could pass just before a new attempt commits and deletes this one's rows)."""
    beat = db.execute(
        update(Judging)
        .where(Judging.id == judging_id, Judging.attempt == attempt, Judging.status == "running")
        .values(heartbeat_at=utcnow())
    )
    if beat.rowcount != 1:  # type: ignore[attr-defined]
        raise Superseded
    j = db.get(Judging, judging_id)
    assert j is not None
    return j


def store(
    url: str, judging_id: int, attempt: int, r: CaseResult, weights: dict[str, float]
) -> bool:
    """Keep `r` for this attempt; False when the case was stored already (by a process
    that judged it too). Its case run is marked done by its judge once paced."""
    try:
        with session_scope(url) as db:
            j = owned(db, judging_id, attempt)
            if _stored(db, j.id, r.case):
                return False
            db.add(_row(j.id, r, weights.get(r.case, r.weight)))
            db.flush()  # the unique key: on SQLite, a store of the same case at once fails here
            done = stored_count(db, j.id)
            j.submission.status_detail = f"judging on {j.worker}: {done} of {len(weights)} cases"
            news.after_commit(db, News(j.submission_id, team=j.submission.team_id))
    except IntegrityError:
        log.info("case %s of judging %s was stored by another process", r.case, judging_id)
        return False
    return True


def _stored(db: Session, judging_id: int, case: str) -> bool:
    found = select(CaseResultRow.id).where(
        CaseResultRow.judging_id == judging_id, CaseResultRow.case == case
    )
    return db.scalar(found) is not None


def stored_count(db: Session, judging_id: int) -> int:
    return (
        db.scalar(
            select(func.count(CaseResultRow.id)).where(CaseResultRow.judging_id == judging_id)
        )
        or 0
    )


def _row(judging_id: int, r: CaseResult, weight: float) -> CaseResultRow:
    return CaseResultRow(
        judging_id=judging_id,
        case=r.case,
        split=r.split,
        weight=weight,
        verdict=str(r.verdict),
        message=r.message,
        peak=r.peak,
        lower_bound=r.lower_bound,
        score=r.score,
        time_s=r.time_s,
        plan_digest=r.plan_digest,
        log=r.log,
        makespan_us=r.makespan_us,
        request_us_mean=r.request_us_mean,
        request_us_p99=r.request_us_p99,
    )


def finish(url: str, judging_id: int, attempt: int, build_error: str) -> None:
    with session_scope(url) as db:
        j = owned(db, judging_id, attempt)
        j.build_error = build_error
        finalize(db, j)


def finalize(db: Session, j: Judging) -> None:
    results = [_case_result(r) for r in j.results]
    j.public_score = problem_score(results, "public")
    j.hidden_score = problem_score(results, "hidden")
    j.status, j.finished_at = "final", utcnow()
    sub = j.submission
    news.after_commit(db, News(sub.id, team=sub.team_id, board=True))
    sub.current_judging_id = j.id
    sub.public_score, sub.hidden_score = j.public_score, j.hidden_score
    newer = db.scalar(
        select(Judging.id).where(
            Judging.submission_id == sub.id,
            Judging.id > j.id,
            Judging.status.in_(JUDGING_UNDERWAY),
        )
    )
    if newer is None:
        sub.status = "done"
        counts = sorted(totals(results)["verdicts"].items())
        sub.status_detail = f"judged ({j.kind}): " + ", ".join(f"{n} {v}" for v, n in counts)


def _case_result(row: CaseResultRow) -> CaseResult:
    return CaseResult(
        row.case, row.split, row.weight, Verdict(row.verdict), row.message, row.lower_bound,
        row.peak, row.score, row.time_s, row.plan_digest, row.log, row.makespan_us,
        row.request_us_mean, row.request_us_p99,
    )  # fmt: skip
