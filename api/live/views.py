"""What a live event stream sends, read from the database: a submission as one visibility
class sees it (organizers see every case; contestants see what api.actions.submissions lets
them, the same for every contestant), with its events already serialized, and the one
read that tells which watched submissions have news (api.live.broadcast offers both).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import joinedload

from api.actions import submissions
from api.db.models import CaseResultRow, Contest, Judging, Submission, User
from api.db.session import session_scope
from api.reads import readcache

ORGANIZER, CONTESTANT = "organizer", "contestant"
STATUS_KEYS = ("status", "status_detail", "queue_position", "cases_done", "cases_total")
IN_CHUNK = 500  # watched submissions per poll query


@dataclass(frozen=True)
class View:
    """A submission as one visibility class sees it, its events ready to send."""

    judging_id: int
    status: str  # JSON of the status event
    cases: tuple[tuple[int, str], ...]  # (seq, JSON of the case event), in commit order
    final: bool
    end: str  # JSON of the end event
    queued: bool
    team: int = 0  # the submission's team: its news clears a kept final view


def build_view(
    db: Any, sub: Submission, viewer: User | None, found: tuple[Judging | None, int | None]
) -> View:
    """`found`: submissions.shown_and_position's answer (one for every class)."""
    judging, position = found
    body = submissions.submission_dict(
        db, sub, viewer, known=(judging, position, submissions.policy_for(db, sub, viewer))
    )
    # Commit order (row ids): what a viewer sees of a judging is always a prefix of it,
    # so a case's position (its seq) is the same on every connection and after a reconnect.
    # A viewer who sees hidden cases only at the end gets the public ones first: cases run
    # side by side, and a hidden one may be stored before a public one (worker.cases).
    order = {r.case: r.id for r in judging.results} if judging else {}
    progress = {"cases_done": body["cases_done"], "cases_total": body["cases_total"]}
    public_first = body["hidden_detail"] != "all"
    shown = sorted(
        body["results"],
        key=lambda r: (public_first and r["split"] != "public", order.get(r["case"], 0)),
    )
    return View(
        judging_id=body["judging_id"] or 0,
        status=json.dumps({k: body[k] for k in STATUS_KEYS}),
        cases=tuple((i, json.dumps({**r, **progress})) for i, r in enumerate(shown, 1)),
        final=body["status"] in ("done", "error"),
        end=json.dumps(body),
        queued=body["status"] == "queued",
        team=sub.team_id,
    )


def read_views(url: str, sub_id: int, classes: set[str]) -> dict[str, View]:
    """One read of the submission for every class watching it."""
    with session_scope(url) as db:
        sub = db.get(Submission, sub_id, options=[joinedload(Submission.team)])
        if sub is None:
            return {}
        found = submissions.shown_and_position(db, sub)
        # hidden_policy asks only whether the viewer is an organizer (a transient user,
        # never added to the session); every contestant sees what no one logged in sees.
        viewers = {ORGANIZER: User(is_admin=True), CONTESTANT: None}
        return {cls: build_view(db, sub, viewers[cls], found) for cls in classes}


def fingerprints(url: str, ids: list[int]) -> tuple[dict[int, tuple], tuple]:
    """What changes when a submission has news, for each of `ids`, and for the queue
    and the contest (queue positions; the reveal), in one read."""
    last_judging = (
        select(func.max(Judging.id)).where(Judging.submission_id == Submission.id)
    ).scalar_subquery()
    last_case = (
        select(func.max(CaseResultRow.id))
        .join(Judging, CaseResultRow.judging_id == Judging.id)
        .where(Judging.submission_id == Submission.id)
    ).scalar_subquery()
    cols = (Submission.id, Submission.status, Submission.status_detail, last_judging, last_case)
    found: dict[int, tuple] = {}
    with session_scope(url) as db:
        for start in range(0, len(ids), IN_CHUNK):
            chunk = ids[start : start + IN_CHUNK]
            for row in db.execute(select(*cols).where(Submission.id.in_(chunk))):
                found[row[0]] = tuple(row[1:])
        queue = db.execute(
            select(func.count(Judging.id), func.max(Judging.id)).where(Judging.status == "queued")
        ).one()
        # every contest's reveal (a submission's view follows its own contest's)
        reveals = select(Contest.id, Contest.hidden_revealed, Contest.hidden_detail)
        contest = tuple(tuple(r) for r in db.execute(reveals.order_by(Contest.id)))
    return found, (tuple(queue), contest)


def final_key(url: str, sub_id: int, cls: str) -> tuple[str, str, int, str]:
    """The readcache key of a judged submission's kept view (url: the database's)."""
    return ("final view", url, sub_id, cls)


def keep_final(url: str, sub_id: int, views: dict[str, View], gen: int) -> None:
    """A judged submission's view, kept for the streams opened after its channel closed
    (a client following a finished submission: a read each, 15 % of the API's CPU under
    the contest profile). Kept as the team's lists are, so the news that clears those
    (a rejudge, a rescore, an organizer's write, the reveal) clears it too."""
    for cls, view in views.items():
        if view.final:
            scope = (readcache.LISTS, view.team)
            readcache.put(final_key(url, sub_id, cls), view, gen, scope)
