"""Exports to take away, as CSV or JSON: the organizer's standings, per-case results and
audit log; a team's own results. The same rules as every view: a team's export holds
its hidden cases as the API shows them (withheld fields empty until the reveal).

CSV: one header row, numbers as Python writes them (a float reads back to the same
float), empty cells for nulls; a text cell that a spreadsheet would run as a formula
(starting with = + - @ or a tab) gets a leading apostrophe.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.actions import audit, contests, problems
from api.actions.submissions import policy_for
from api.db.models import CaseResultRow, Contest, Submission, Team, User, aware
from api.reads.hidden import WITHHELD, result_dict
from api.reads.leaderboard import leaderboard

FORMATS = ("csv", "json")
STANDINGS = ("problem", "version", "rank", "team", "public_score", "hidden_score",
             "submission_id", "submitted_at")  # fmt: skip
RESULT_HEAD = ("submission_id", "team", "problem", "version", "filename", "submitted_at",
               "status", "public_score", "hidden_score")  # fmt: skip
RESULTS = (*RESULT_HEAD, "case", "split", "weight", "verdict", *WITHHELD)
MINE = (*RESULTS, "withheld")  # a hidden case's withheld fields are empty
AUDIT = ("id", "at", "actor", "action", "target", "detail")
FORMULA = ("=", "+", "-", "@", "\t", "\r")


def standings(
    db: Session, viewer: User, slug: str | None = None, contest: Contest | None = None
) -> list[dict[str, Any]]:
    """Every (or one) problem's board of `contest` (None: the current one) as `viewer`
    sees it, a row per ranked team."""
    contest = contest if contest is not None else contests.current(db)
    rows = []
    for version in _versions(db, slug, contest):
        board = leaderboard(db, version.problem.slug, viewer, contest)
        for r in board["rows"]:
            rows.append({"problem": board["problem"], "version": board["version"], **r})
    return rows


def results(
    db: Session, slug: str | None = None, contest: Contest | None = None
) -> list[dict[str, Any]]:
    """The organizer's: each judged submission's current per-case results, whole (of
    `contest`'s submissions; None: every contest's)."""
    return list(_result_rows(db, None, slug, lambda _: "all", contest))


def own_results(db: Session, user: User, contest: Contest | None = None) -> list[dict[str, Any]]:
    """A team's own: every one of its judged submissions (in `contest`; None: in any),
    hidden cases as it may see them (by each submission's contest's reveal)."""
    return list(_result_rows(db, user, None, lambda sub: policy_for(db, sub, user), contest))


def _versions(db: Session, slug: str | None, contest: Contest) -> list[Any]:
    if slug:
        return [problems.current_version(db, slug, contest)]
    return problems.all_current(db, contest)


def _result_rows(
    db: Session,
    team_of: User | None,
    slug: str | None,
    policy_of: Callable[[Submission], str],
    contest: Contest | None,
) -> Iterable[dict[str, Any]]:
    query = (
        select(Submission, Team.name)
        .join(Team, Team.id == Submission.team_id)
        .where(Submission.current_judging_id.is_not(None), Team.system.is_(False))
        .order_by(Submission.id)
    )
    if team_of is not None:
        query = query.where(Submission.team_id == team_of.team_id)
    if contest is not None:
        query = query.where(Submission.contest_id == contest.id)
    if slug is not None:
        version = problems.current_version(db, slug, contest)
        query = query.where(Submission.version_id == version.id)
    for sub, team in db.execute(query).all():
        policy = policy_of(sub)
        facts = problems.version_facts(db, [sub.version_id])[sub.version_id]
        head = {
            "submission_id": sub.id, "team": team, "problem": facts.slug,
            "version": facts.number, "filename": sub.filename,
            "submitted_at": aware(sub.created_at).isoformat(), "status": sub.status,
            "public_score": sub.public_score,
            "hidden_score": sub.hidden_score if policy == "all" else None,
        }  # fmt: skip
        rows = db.scalars(
            select(CaseResultRow)
            .where(CaseResultRow.judging_id == sub.current_judging_id)
            .order_by(CaseResultRow.case)
        )
        for row in rows:
            yield {**head, **result_dict(row, policy), "weight": row.weight}


def audit_log(db: Session, contest: Contest | None = None) -> list[dict[str, Any]]:
    """Oldest first; `contest`: that contest's entries only."""
    return list(reversed(audit.entries(db, 10**9, contest.id if contest else None)))


def as_csv(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)  # lines end in CRLF (RFC 4180): a CR in a cell is quoted too
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(c)) for c in columns])
    return out.getvalue()


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return "'" + text if text.startswith(FORMULA) else text


def as_json(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> str:
    return json.dumps([{c: row.get(c) for c in columns} for row in rows], indent=1)
