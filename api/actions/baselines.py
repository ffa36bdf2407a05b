"""Baselines: the reference planners (judge.references) judged by the service itself,
through the same pipeline as any submission, and shown as labelled rows on each
problem's board so that a score means something.

Their submissions belong to the service's own team (`Team.system`), which is never a
contestant: the board leaves it out of the ranking (api.reads.leaderboard) and shows its
submissions here instead. A version's baselines are queued when it is imported and
judged on the public split; the hidden split only after the reveal (a rejudge queued
by the reveal). The organizer hides them with the contest's `baselines` switch (also
no new ones are queued while it is off); MEMORACE_BASELINES=0 never judges any.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from api import queue
from api.actions import contests
from api.blobs import blob_store
from api.db.models import (
    Baseline,
    Contest,
    Judging,
    Problem,
    ProblemVersion,
    Submission,
    Team,
    User,
)
from api.db.session import session_scope
from api.settings import Settings
from judge.references import LEVELS, baselines_for
from judge.submission import SUFFIXES, upload_suffix

log = logging.getLogger("memorace.api")
TEAM = "memorace baselines"
USER = "memorace-baselines"  # no password: nobody logs in as it
PRIORITY = queue.PRIORITY_REJUDGE  # after every contestant's fresh submission


def owner(db: Session) -> User:
    """The system team's user, made on first use."""
    team = db.scalar(select(Team).where(Team.system.is_(True)))
    if team is None:
        team = Team(name=TEAM, system=True)
        db.add(team)
        db.flush()
    user = db.scalar(select(User).where(User.team_id == team.id))
    if user is None:
        user = User(username=USER, password_hash="", team_id=team.id)
        db.add(user)
        db.flush()
    return user


def enabled(db: Session, settings: Settings) -> bool:
    """Whether new versions get baselines: some contest shows them."""
    shown = select(Contest.id).where(Contest.baselines.is_(True)).limit(1)
    return settings.baselines and db.scalar(shown) is not None


def create_for(db: Session, settings: Settings, version: ProblemVersion) -> int:
    """Queue (in this transaction) a judging of each reference planner for `version`;
    `send` enqueues them once committed. Returns how many were made."""
    if not enabled(db, settings):
        return 0
    made = 0
    have = set(db.scalars(select(Baseline.name).where(Baseline.version_id == version.id)))
    for level, path in baselines_for(version.type).items():
        if level in have:
            continue
        data = path.read_bytes()
        blob_store(settings).put_bytes(data)
        sub = Submission(
            team_id=owner(db).team_id, user_id=owner(db).id, version_id=version.id,
            sha256=hashlib.sha256(data).hexdigest(), filename=path.name,
            language=_language(path.name), size=len(data), status="queued",
            status_detail=f"the {level} baseline: waiting for a worker",
        )  # fmt: skip
        db.add(sub)
        db.flush()
        db.add(Judging(submission_id=sub.id, kind="judge", priority=PRIORITY))
        db.add(Baseline(version_id=version.id, name=level, submission_id=sub.id))
        made += 1
    db.flush()
    return made


def _language(filename: str) -> str:
    kind = SUFFIXES[upload_suffix(filename) or ".py"]
    return "archive" if kind in ("zip", "tar") else kind


def catch_up(settings: Settings) -> int:
    """Make the baselines every current version lacks (one imported while they were off,
    or before this service had them), then enqueue every queued baseline judging (after
    the commit that made it; a lost message is re-sent by the reaper). Returns how many
    were sent."""
    with session_scope(settings.database_url) as db:
        current = select(Problem.current_version_id).where(Problem.current_version_id.is_not(None))
        for version in db.scalars(select(ProblemVersion).where(ProblemVersion.id.in_(current))):
            create_for(db, settings, version)
    with session_scope(settings.database_url) as db:
        ids = list(
            db.scalars(
                select(Judging.id)
                .join(Baseline, Baseline.submission_id == Judging.submission_id)
                .where(Judging.status == "queued")
            )
        )
    for judging_id in ids:
        try:
            queue.enqueue_judging(judging_id, PRIORITY)
        except Exception as exc:
            log.warning("cannot enqueue baseline judging %s: %s", judging_id, exc)
    return len(ids)


def after_reveal(db: Session, contest: Contest) -> int:
    """Queue (in this transaction) a judging of every baseline of `contest`'s versions
    judged on the public split only; `send` enqueues them once committed. A baseline
    still queued needs none: it will run every split."""
    made = 0
    versions = contests.version_ids(db, contest)
    for base in db.scalars(select(Baseline).where(Baseline.version_id.in_(versions))):
        sub = base.submission
        waiting = db.scalar(
            select(Judging.id).where(Judging.submission_id == sub.id, Judging.status == "queued")
        )
        if waiting is not None or sub.hidden_score is not None or sub.status == "queued":
            continue
        if not any(c.split != "public" for c in sub.version.cases):
            continue
        db.add(Judging(submission_id=sub.id, kind="rejudge", priority=PRIORITY,
                       reason="the reveal: the hidden cases too"))  # fmt: skip
        sub.status, sub.status_detail = "queued", "queued for its hidden cases (the reveal)"
        made += 1
    db.flush()
    return made


def rows(
    db: Session, version_id: int, revealed: bool, contest: Contest | None = None
) -> list[dict[str, Any]]:
    """The board's baseline rows, naive to strong; [] while `contest`'s organizer hides
    them (None: the current contest). `revealed`: whether the viewer may see hidden
    scores (the board's own rule, by the board's contest)."""
    contest = contest if contest is not None else contests.current(db)
    if not contest.baselines:
        return []
    found = db.execute(
        select(Baseline.name, Submission)
        .join(Submission, Submission.id == Baseline.submission_id)
        .where(Baseline.version_id == version_id)
    ).all()
    order = {level: i for i, level in enumerate(LEVELS)}
    return [
        {
            "baseline": name,
            "label": f"{name} reference",
            "planner": sub.filename,
            "status": sub.status,
            "public_score": sub.public_score,  # the last judging's, while a rejudge runs
            "hidden_score": sub.hidden_score if revealed else None,
            "submission_id": sub.id,
        }
        for name, sub in sorted(found, key=lambda f: order.get(f[0], len(order)))
    ]


def system_team_ids(db: Session) -> set[int]:
    return set(db.scalars(select(Team.id).where(Team.system.is_(True))))


def interleave(board: dict[str, Any]) -> list[dict[str, Any]]:
    """The board's team rows with its baseline rows placed where their score would rank
    (after the teams they tie with); unjudged baselines last. Teams keep their ranks."""
    key = board["ranked_by"]
    scored = [b for b in board.get("baselines", []) if b.get(key) is not None]
    pending = [b for b in board.get("baselines", []) if b.get(key) is None]
    # Stable: the teams keep the board's order among themselves.
    merged = sorted(
        [*board["rows"], *scored], key=lambda r: (-(r.get(key) or 0.0), "baseline" in r)
    )
    return merged + pending
