"""Organizer actions; each one is written to the audit log in the same transaction."""

from __future__ import annotations

import unicodedata
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from api import queue
from api.access.auth import hash_password, new_token
from api.actions import baselines, contests, finals
from api.actions.audit import record
from api.actions.problems import current_version
from api.db.models import (
    Contest,
    Judging,
    ProblemVersion,
    Registration,
    Submission,
    Team,
    User,
    aware,
)
from api.errors import Conflict, NotFound, ServiceError
from api.reads.hidden import HIDDEN_DETAILS

SIGNUP_MODES = ("closed", "open", "approval")  # api.access.signup
MAX_TEAM_SIZE = 100


def check_name(name: str, what: str, path: bool) -> None:
    """No control or invisible characters (look-alikes of other names, text that moves
    a terminal); a username is also a path segment of the organizers' buttons
    (/admin/users/NAME/...), where '/', '\\' or a dot segment would aim them at another
    account (a browser resolves 'x/../admin' to 'admin')."""
    if any(unicodedata.category(c)[0] in "CZ" and c != " " for c in name):
        raise ServiceError(f"{what} holds a control or invisible character", 422)
    if path and ("/" in name or "\\" in name or name in (".", "..")):
        raise ServiceError(f"{what} must not hold '/' or '\\', nor be '.' or '..'", 422)


def create_team(db: Session, name: str, actor: User | None, contest: Contest | None = None) -> Team:
    """A team, registered in `contest` (None: the current contest)."""
    name = name.strip()
    if not 1 <= len(name) <= 100:
        raise ServiceError("a team name has 1 to 100 characters")
    check_name(name, "a team name", path=False)
    if name == baselines.TEAM:  # baselines.owner makes it; taken, it could not
        raise Conflict(f"'{name}' is the reference planners' team: the name is reserved")
    if db.scalar(select(Team).where(Team.name == name)):
        raise Conflict(f"team '{name}' exists already")
    team = Team(name=name)
    db.add(team)
    db.flush()
    contest = contest if contest is not None else contests.current(db)
    contests.register(db, contest, team.id)
    record(db, actor, "create_team", name, {"contest": contest.slug}, contest=contest.id)
    return team


def create_user(
    db: Session,
    username: str,
    password: str,
    team_name: str | None,
    is_admin: bool,
    actor: User | None,
) -> User:
    username = username.strip()
    if not 1 <= len(username) <= 100:
        raise ServiceError("a username has 1 to 100 characters")
    check_name(username, "a username", path=True)
    if password and len(password) < 8:
        raise ServiceError("a password has at least 8 characters")
    if username == baselines.USER:
        raise Conflict(f"'{username}' is the reference planners' user: the name is reserved")
    if db.scalar(select(User).where(User.username == username)):
        raise Conflict(f"user '{username}' exists already")
    team = None
    if team_name:
        team = db.scalar(select(Team).where(Team.name == team_name))
        if team is None:
            raise NotFound(f"no team '{team_name}'")
        _not_system(team)
    user = User(
        username=username,
        password_hash=hash_password(password) if password else "",
        team_id=team.id if team else None,
        is_admin=is_admin,
    )
    db.add(user)
    db.flush()
    record(db, actor, "create_user", username, {"team": team_name, "admin": is_admin})
    return user


def issue_token(
    db: Session, username: str, name: str, actor: User | None, expires_at: datetime | None = None
) -> str:
    user = db.scalar(select(User).where(User.username == username))
    if user is None:
        raise NotFound(f"no user '{username}'")
    if user.team is not None:
        _not_system(user.team)
    token = new_token(db, user, name, expires_at)
    until = expires_at.isoformat() if expires_at else None
    record(db, actor, "issue_token", username, {"name": name, "expires_at": until})
    return token


def _not_system(team: Team) -> None:
    """The system team (api.actions.baselines) submits the reference planners only: a user or a
    token in it would submit as the references."""
    if team.system:
        raise Conflict(
            f"team '{team.name}' is the reference planners' team: it takes no users and no tokens"
        )


def rejudge(
    db: Session,
    actor: User | None,
    submission_id: int | None = None,
    team: str | None = None,
    problem: str | None = None,
) -> list[int]:
    """Queue a new judging (lower priority than fresh submissions) for each chosen
    submission; the earlier judgings stay as history. Returns the judging ids."""
    subs = _select_submissions(db, submission_id, team, problem)
    ids = []
    for sub in subs:
        for old in db.scalars(
            select(Judging).where(Judging.submission_id == sub.id, Judging.status == "queued")
        ):
            old.status, old.reason = "superseded", "replaced by a rejudge"
        judging = Judging(submission_id=sub.id, kind="rejudge", priority=queue.PRIORITY_REJUDGE)
        db.add(judging)
        sub.status, sub.status_detail = "queued", "queued for a rejudge"
        db.flush()
        ids.append(judging.id)
    record(
        db,
        actor,
        "rejudge",
        _what(submission_id, team, problem),
        {"judgings": ids, "count": len(ids)},
    )
    return ids


def send_rejudges(ids: list[int]) -> bool:
    """Enqueue committed rejudges; False when the broker is down (the reaper re-sends)."""
    try:
        for judging_id in ids:
            queue.enqueue_judging(judging_id, queue.PRIORITY_REJUDGE)
    except Exception:
        return False
    return True


def _what(submission_id: int | None, team: str | None, problem: str | None) -> str:
    parts = [f"submission {submission_id}" if submission_id else "", f"team {team}" if team else ""]
    parts.append(f"problem {problem}" if problem else "")
    return ", ".join(p for p in parts if p)


def _select_submissions(
    db: Session, submission_id: int | None, team: str | None, problem: str | None
) -> list[Submission]:
    if not (submission_id or team or problem):
        raise ServiceError("say which submissions: submission_id, team or problem")
    query = select(Submission).order_by(Submission.id)
    if submission_id:
        query = query.where(Submission.id == submission_id)
    if team:
        found = db.scalar(select(Team).where(Team.name == team))
        if found is None:
            raise NotFound(f"no team '{team}'")
        query = query.where(Submission.team_id == found.id)
    if problem:
        query = query.where(Submission.version_id == current_version(db, problem).id)
    subs = list(db.scalars(query))
    if submission_id and not subs:
        raise NotFound(f"no submission {submission_id}")
    return subs


def disqualify(
    db: Session, actor: User | None, submission_id: int | None, team: str | None, why: str
) -> None:
    if submission_id:
        sub = db.get(Submission, submission_id)
        if sub is None:
            raise NotFound(f"no submission {submission_id}")
        sub.disqualified = True
    elif team:
        found = db.scalar(select(Team).where(Team.name == team))
        if found is None:
            raise NotFound(f"no team '{team}'")
        found.disqualified = True
    else:
        raise ServiceError("say whom: submission_id or team")
    record(db, actor, "disqualify", _what(submission_id, team, None), {"why": why})


def contest(db: Session) -> Contest:
    """The installation's current contest (api.actions.contests)."""
    return contests.current(db)


def update_contest(
    db: Session, actor: User | None, changes: dict[str, Any], row: Contest | None = None
) -> Contest:
    """Changes `row`'s settings (None: the current contest's)."""
    row = row if row is not None else contest(db)
    allowed = {"title", "start_at", "end_at", "freeze_at", "hidden_revealed", "hidden_detail",
               "baselines", "hidden_judging", "final_picks", "signup", "team_size"}  # fmt: skip
    unknown = set(changes) - allowed
    if unknown:
        raise ServiceError(f"unknown contest settings: {', '.join(sorted(unknown))}")
    for switch in ("hidden_revealed", "baselines"):  # null would be a NOT NULL error (500)
        if switch in changes and not isinstance(changes[switch], bool):
            raise ServiceError(f"{switch} is true or false", 422)
    detail = changes.get("hidden_detail", row.hidden_detail)
    if detail not in HIDDEN_DETAILS:
        raise ServiceError(
            f"hidden_detail must be one of {', '.join(HIDDEN_DETAILS)}, not {detail!r}", 422
        )
    _check_finals(changes)
    _check_signup(changes)
    revealing = bool(changes.get("hidden_revealed")) and not row.hidden_revealed
    for key, value in changes.items():
        setattr(row, key, value)
    if revealing:  # the baselines' hidden cases are judged now (sent after the commit)
        baselines.after_reveal(db, row)
    start, end = row.start_at, row.end_at
    if isinstance(start, datetime) and isinstance(end, datetime) and aware(end) <= aware(start):
        raise ServiceError("the contest must end after it starts")
    detail = {k: str(v) for k, v in changes.items()}
    record(db, actor, "update_contest", f"contest {row.slug}", detail, contest=row.id)
    return row


def _check_finals(changes: dict[str, Any]) -> None:
    mode = changes.get("hidden_judging", "submission")
    if mode not in finals.MODES:
        raise ServiceError(f"hidden_judging must be one of {', '.join(finals.MODES)}", 422)
    picks = changes.get("final_picks", 1)
    if type(picks) is not int or not 1 <= picks <= finals.MAX_PICKS:
        raise ServiceError(f"final_picks is a whole number from 1 to {finals.MAX_PICKS}", 422)


def _check_signup(changes: dict[str, Any]) -> None:
    if "signup" in changes and changes["signup"] not in SIGNUP_MODES:
        raise ServiceError(f"signup must be one of {', '.join(SIGNUP_MODES)}", 422)
    size = changes.get("team_size", 1)
    if type(size) is not int or not 1 <= size <= MAX_TEAM_SIZE:
        raise ServiceError(f"team_size is a whole number from 1 to {MAX_TEAM_SIZE}", 422)


def contest_dict(row: Contest) -> dict[str, Any]:
    def iso(v: datetime | None) -> str | None:
        return v.isoformat() if v else None

    return {
        "id": row.id,
        "slug": row.slug,
        "current": row.is_current,
        "title": row.title,
        "start_at": iso(row.start_at),
        "end_at": iso(row.end_at),
        "freeze_at": iso(row.freeze_at),
        "hidden_revealed": row.hidden_revealed,
        "hidden_detail": row.hidden_detail,
        "baselines": row.baselines,
        "hidden_judging": row.hidden_judging,
        "final_picks": row.final_picks,
        "signup": row.signup,
        "team_size": row.team_size,
    }


def contest_full(db: Session, row: Contest) -> dict[str, Any]:
    """The contest as organizers see it: its settings, problems and teams."""
    teams = db.execute(
        select(Team.name, Registration.status)
        .join(Registration, Registration.team_id == Team.id)
        .where(Registration.contest_id == row.id)
        .order_by(Team.name)
    ).all()
    versions = [db.get(ProblemVersion, i) for i in contests.version_ids(db, row)]
    return {
        **contest_dict(row),
        "problems": [{"slug": v.problem.slug, "version": v.number} for v in versions if v],
        "teams": [{"team": name, "status": status} for name, status in teams],
    }
