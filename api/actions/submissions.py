"""Submissions: accept an upload, store it by sha256, queue its judging, show it."""

from __future__ import annotations

import hashlib
import logging
import os
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import ColumnElement, func, select, update
from sqlalchemy.orm import Session, aliased
from sqlalchemy.orm.attributes import set_committed_value

from api import queue
from api.access.uploads import too_large
from api.actions import contests
from api.actions.problems import current_version, version_facts
from api.blobs import blob_store
from api.db.models import (
    CaseResultRow,
    Contest,
    Judging,
    Submission,
    Team,
    User,
    aware,
    utcnow,
)
from api.errors import Forbidden, NotFound, ServiceError, TooMany
from api.reads.hidden import (
    hidden_policy,
    hides_progress,
    judged_before_hidden,
    progress_detail,
    result_dict,
    shown_detail,
)
from api.settings import Settings
from judge.submission import ACCEPTED, SUFFIXES, upload_suffix

log = logging.getLogger("memorace.api")


def language_of(filename: str) -> str:
    suffix = upload_suffix(filename)
    if suffix is None:
        raise ServiceError(f"unsupported file type '{filename}'; upload one of {ACCEPTED}", 415)
    kind = SUFFIXES[suffix]
    return "archive" if kind in ("zip", "tar") else kind


def artifact_path(settings: Settings, sha256: str, filename: str) -> Path:
    """Where uploads were stored before the blob store (still read for older rows); the
    suffix tells the judge what kind of submission it is."""
    return settings.artifacts / sha256[:2] / f"{sha256}{upload_suffix(filename)}"


def create_submission(
    db: Session,
    settings: Settings,
    user: User,
    slug: str,
    filename: str,
    data: bytes,
    contest_ref: str | None = None,
) -> tuple[Submission, bool]:
    """(the submission, whether an earlier identical one was reused), in the contest
    `contest_ref` names (None: the caller's, api.actions.contests.resolve). Commits nothing."""
    if user.team is None:
        raise Forbidden("your account belongs to no team, so it cannot submit")
    if user.team.system:  # only api.actions.baselines submits for it, never through here
        raise Forbidden(f"team '{user.team.name}' is the reference planners': it cannot submit")
    if user.team.disqualified:
        raise Forbidden(f"team '{user.team.name}' is disqualified")
    contest = contests.resolve(db, user, contest_ref)
    _check_entered(db, user, contest)
    filename = _clean_name(filename)
    language = language_of(filename)
    if not data:
        raise ServiceError("the uploaded file is empty")
    if len(data) > settings.upload_limit_bytes:
        raise too_large(settings.upload_limit_bytes)
    version = current_version(db, slug, contest)
    sha = hashlib.sha256(data).hexdigest()
    earlier = db.scalar(
        select(Submission)
        .where(
            Submission.team_id == user.team_id,
            Submission.contest_id == contest.id,
            Submission.version_id == version.id,
            Submission.sha256 == sha,
            Submission.status != "error",
            ~_judge_fault(),
        )
        .order_by(Submission.id)
    )
    if earlier is not None:
        return earlier, True
    _check_rate(db, settings, user)
    blob_store(settings).put_bytes(data)  # under `sha`, which every worker reads
    sub = Submission(
        team_id=user.team_id,
        user_id=user.id,
        version_id=version.id,
        contest_id=contest.id,
        sha256=sha,
        filename=filename,
        language=language,
        size=len(data),
        status="queued",
        status_detail="waiting for a worker",
    )
    db.add(sub)
    db.flush()
    db.add(Judging(submission_id=sub.id, kind="judge", priority=queue.PRIORITY_FRESH))
    db.flush()
    return sub, False


def _judge_fault() -> Any:
    """A submission whose judging ended in our fault (a JUDGE_ERROR case; a failed
    judging makes it `error`) is never reused: the same bytes are judged again."""
    return (
        select(CaseResultRow.id)
        .where(
            CaseResultRow.judging_id == Submission.current_judging_id,
            CaseResultRow.verdict == "JUDGE_ERROR",
        )
        .exists()
    )


def send(db: Session, sub: Submission) -> None:
    """Enqueue the submission's queued judgings (after the commit that created them)."""
    for judging in db.scalars(
        select(Judging).where(Judging.submission_id == sub.id, Judging.status == "queued")
    ):
        try:
            queue.enqueue_judging(judging.id, judging.priority)
        except Exception as exc:  # the row is safe; the reaper re-sends it
            log.warning("cannot enqueue judging %s: %s", judging.id, exc)
            sub.status_detail = "queued; the queue is unreachable, it will be re-sent"
            db.commit()


def _clean_name(filename: str) -> str:
    name = os.path.basename(filename.replace("\\", "/")).strip()
    name = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:200]
    if not name or name.startswith("."):
        raise ServiceError("the upload needs a file name such as planner.py")
    return name


def _check_rate(db: Session, settings: Settings, user: User) -> None:
    """Counted under the team's write lock, held until the caller commits the insert:
    parallel uploads of one team are counted one after the other, never together."""
    lock_team(db, user.team_id)
    since = utcnow() - timedelta(seconds=settings.rate_window_s)
    recent = db.scalar(
        select(func.count(Submission.id)).where(
            Submission.team_id == user.team_id, Submission.created_at >= since
        )
    )
    if recent is not None and recent >= settings.rate_limit:
        raise TooMany(
            f"team '{user.team.name if user.team else ''}' has made {recent} submissions in the "
            f"last {settings.rate_window_s} s; the limit is {settings.rate_limit}"
        )


def lock_team(db: Session, team_id: int | None) -> None:
    if db.get_bind().dialect.name == "postgresql":
        db.execute(select(Team.id).where(Team.id == team_id).with_for_update())
    else:  # SQLite locks the whole database: a no-op write takes its write lock now
        no_op = update(Team).where(Team.id == team_id).values(id=Team.id)  # no team changes:
        db.execute(no_op.execution_options(memorace_bookkeeping=True))  # no news for tokens


def _check_entered(db: Session, user: User, contest: Contest) -> None:
    """Contestants submit to a contest their team is registered in, while it runs."""
    if user.is_admin:
        return
    if contest.id not in contests.registered(db, user.team_id):
        raise Forbidden(f"team '{user.team.name if user.team else ''}' is not registered "
                        f"in contest '{contest.slug}'")  # fmt: skip
    now = utcnow()
    if contest.start_at and now < aware(contest.start_at):
        raise Forbidden(f"the contest starts at {contest.start_at.isoformat()}")
    if contest.end_at and now >= aware(contest.end_at):
        raise Forbidden(f"the contest ended at {contest.end_at.isoformat()}")


def get_submission(db: Session, sub_id: int, user: User) -> Submission:
    sub = db.get(Submission, sub_id)
    if sub is None or (not user.is_admin and sub.team_id != user.team_id):
        raise NotFound(f"no submission {sub_id}")  # also for other teams': no probing
    return sub


def shown_and_position(db: Session, sub: Submission) -> tuple[Judging | None, int | None]:
    """(the judging whose results to show, the queue position) from one read of the
    latest judging: each read of a view waits for the GIL again under load."""
    latest = latest_judging(db, sub)
    return _shown_after(db, sub, latest), _position_of(db, latest)


def _position_of(db: Session, judging: Judging | None) -> int | None:
    """The queue position of a submission whose latest judging is `judging`: 1 = next;
    None unless it waits for a worker."""
    if judging is None or judging.status != "queued":
        return None
    ahead = db.scalar(
        select(func.count(Judging.id)).where(
            Judging.status == "queued",
            (Judging.priority < judging.priority)
            | ((Judging.priority == judging.priority) & (Judging.id < judging.id)),
        )
    )
    return int(ahead or 0) + 1


def latest_judging(db: Session, sub: Submission) -> Judging | None:
    return db.scalar(
        select(Judging)
        .where(Judging.submission_id == sub.id, Judging.status != "superseded")
        .order_by(Judging.id.desc())
    )


def _shown_after(db: Session, sub: Submission, judging: Judging | None) -> Judging | None:
    """The judging whose results to show, the latest (`judging`) known: a running one,
    else the newest final one."""
    if judging is not None and judging.status in ("running", "final"):
        return judging
    if sub.current_judging_id:
        return db.get(Judging, sub.current_judging_id)
    return judging


def on_the_board(
    version_id: int, system: bool = False, contest_id: int | None = None
) -> tuple[ColumnElement[bool], ...]:
    """Which submissions count on a problem version's board (its ranks, its history,
    the per-case bests): judged to the end, neither it nor its team disqualified, of
    the contestants' teams (`system`: of the baselines' team, shared by every contest),
    made in contest `contest_id` (None: any). The query joins Team."""
    mine = () if system or contest_id is None else (Submission.contest_id == contest_id,)
    return (
        *mine,
        Submission.version_id == version_id,
        Submission.status == "done",
        Submission.disqualified.is_(False),
        Team.disqualified.is_(False),
        Team.system.is_(system),
    )


def judged_count(splits: list[str] | tuple[str, ...], judging: Judging | None) -> int:
    """How many cases the judging runs: all, or the public ones (api.actions.finals)."""
    if judging is None or judging.split == "all":
        return len(splits)
    return sum(1 for s in splits if s == judging.split)


def submission_dict(
    db: Session,
    sub: Submission,
    user: User | None,
    reused: bool = False,
    known: tuple[Judging | None, int | None, str] | None = None,
) -> dict[str, Any]:
    """`known`: the shown judging (its results loaded), the queue position and the
    hidden policy, when the caller found them for a whole page at once."""
    if known is None:
        known = (*shown_and_position(db, sub), policy_for(db, sub, user))
    judging, position, policy = known
    rows = list(judging.results) if judging else []
    facts = version_facts(db, [sub.version_id])[sub.version_id]
    hiding = hides_progress(judging, policy) and any(s != "public" for s in facts.splits)
    if hiding:  # the hidden cases count as judged in one step, at the end
        rows = judged_before_hidden(rows)
    results = [result_dict(r, policy) for r in rows]
    total = facts.splits.count("public") if hiding else judged_count(facts.splits, judging)
    detail = progress_detail(shown_detail(sub, judging, results, policy), len(rows), total, hiding)
    return {
        "id": sub.id,
        "contest": contest_slug(db, sub.contest_id),
        "problem": facts.slug,
        "problem_version": facts.number,
        "team": sub.team.name,
        "filename": sub.filename,
        "language": sub.language,
        "sha256": sub.sha256,
        "size": sub.size,
        "status": sub.status,
        "status_detail": detail,
        "queue_position": position,
        "created_at": aware(sub.created_at).isoformat(),
        "public_score": sub.public_score,
        "hidden_score": sub.hidden_score if policy == "all" else None,
        "hidden_detail": policy,
        "disqualified": sub.disqualified,
        "reused": reused,
        "judging_id": judging.id if judging else None,
        "judging_status": judging.status if judging else None,
        "build_error": judging.build_error if judging else "",
        "cases_total": judged_count(facts.splits, judging),
        "cases_done": len(rows),
        "hidden_later": hiding,
        "results": results,
    }


def list_submissions(
    db: Session,
    user: User,
    limit: int = 50,
    team_only: bool = True,
    before_id: int | None = None,
) -> list[Submission]:
    """A page, newest first: the `limit` submissions below `before_id` (the cursor)."""
    query = select(Submission).order_by(Submission.id.desc()).limit(limit)
    if team_only or not user.is_admin:
        query = query.where(Submission.team_id == user.team_id)
    if before_id is not None:
        query = query.where(Submission.id < before_id)
    return list(db.scalars(query))


def submission_dicts(db: Session, subs: list[Submission], user: User | None) -> list[dict]:
    """submission_dict for a page, in the same few queries whatever its length: the
    judgings, their results, the versions with cases, the teams and the queue."""
    if not subs:
        return []
    ids = [s.id for s in subs]
    judgings: dict[int, list[Judging]] = {}
    for j in db.scalars(select(Judging).where(Judging.submission_id.in_(ids))):
        judgings.setdefault(j.submission_id, []).append(j)
    latest = {s.id: _latest_of(judgings.get(s.id, [])) for s in subs}
    shown = {s.id: _shown_of(s, latest[s.id], judgings.get(s.id, [])) for s in subs}
    _load_results(db, [j for j in shown.values() if j is not None])
    version_facts(db, {s.version_id for s in subs})  # cached for the rows below
    # The viewer's own team is loaded with the viewer; others' are held until the page
    # is made (the identity map holds rows weakly: rows nobody referenced were dropped,
    # so each sub.team cost a query again).
    others = {s.team_id for s in subs} - {user.team_id if user else None}
    held = list(db.scalars(select(Team).where(Team.id.in_(others)))) if others else []
    positions = queue_positions(db, [j for j in latest.values() if j and j.status == "queued"])
    policies: dict[int | None, str] = {}
    for s in subs:
        if s.contest_id not in policies:
            policies[s.contest_id] = policy_for(db, s, user)
    page = [
        submission_dict(
            db, s, user, known=(shown[s.id], positions.get(s.id), policies[s.contest_id])
        )
        for s in subs
    ]
    del held
    return page


def policy_for(db: Session, sub: Submission, user: User | None) -> str:
    """What `user` sees of `sub`'s hidden cases: by the reveal of its contest."""
    return hidden_policy(db, user, contests.of_submission(db, sub))


def contest_slug(db: Session, contest_id: int | None) -> str | None:
    row = contests.held(db, contest_id) if contest_id is not None else None
    return row.slug if row is not None else None


def _latest_of(judgings: list[Judging]) -> Judging | None:
    """latest_judging's choice among a submission's judgings."""
    live = [j for j in judgings if j.status != "superseded"]
    return max(live, key=lambda j: j.id) if live else None


def _shown_of(sub: Submission, latest: Judging | None, judgings: list[Judging]) -> Judging | None:
    """_shown_after's choice among a submission's judgings."""
    if latest is not None and latest.status in ("running", "final"):
        return latest
    if sub.current_judging_id:
        return next((j for j in judgings if j.id == sub.current_judging_id), None)
    return latest


def _load_results(db: Session, judgings: list[Judging]) -> None:
    rows: dict[int, list[CaseResultRow]] = {j.id: [] for j in judgings}
    query = select(CaseResultRow).where(CaseResultRow.judging_id.in_(rows))
    for row in db.scalars(query.order_by(CaseResultRow.case)):
        rows[row.judging_id].append(row)
    for j in judgings:  # as the relationship (ordered by case) would load them
        set_committed_value(j, "results", rows[j.id])


def queue_positions(db: Session, queued: list[Judging]) -> dict[int, int]:
    """_position_of for several queued judgings in one query, by submission id."""
    if not queued:
        return {}
    ahead = aliased(Judging)
    count = (
        select(func.count(ahead.id))
        .where(
            ahead.status == "queued",
            (ahead.priority < Judging.priority)
            | ((ahead.priority == Judging.priority) & (ahead.id < Judging.id)),
        )
        .correlate(Judging)
        .scalar_subquery()
    )
    found = db.execute(
        select(Judging.submission_id, count).where(Judging.id.in_([j.id for j in queued]))
    )
    return {sub_id: int(n or 0) + 1 for sub_id, n in found}
