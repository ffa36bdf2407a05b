"""The organizers' contest actions (api.actions.contests), each written to the audit log in
the same transaction: the API (api.routes.contests) and the page
(api.pages.organizer_contests) both call these."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.actions import contests
from api.actions.audit import record
from api.db.models import Contest, Problem, ProblemVersion, Team, User
from api.errors import NotFound


def create(db: Session, actor: User, slug: str, title: str, start_at: datetime | None) -> Contest:
    row = contests.create(db, slug, title, start_at)
    record(db, actor, "create_contest", f"contest {row.slug}", {"title": row.title}, row.id)
    return row


def make_current(db: Session, actor: User, ref: str) -> Contest:
    """A request that names no contest means this one from now on."""
    row = contests.resolve(db, actor, ref)
    contests.make_current(db, row)
    record(db, actor, "current_contest", f"contest {row.slug}", {}, row.id)
    return row


def put_problem(db: Session, actor: User, ref: str, slug: str, version: int | None) -> Contest:
    """The problem in the contest, pinned to `version` (None: following the current)."""
    row, problem = contests.resolve(db, actor, ref), _problem(db, slug)
    pinned = None
    if version is not None:
        pinned = db.scalar(
            select(ProblemVersion.id).where(
                ProblemVersion.problem_id == problem.id, ProblemVersion.number == version
            )
        )
        if pinned is None:
            raise NotFound(f"no version {version} of '{problem.slug}'")
    contests.add_problem(db, row, problem, pinned)
    detail = {"version": version or "current"}
    record(db, actor, "contest_problem", f"contest {row.slug}: {problem.slug}", detail, row.id)
    return row


def remove_problem(db: Session, actor: User, ref: str, slug: str) -> Contest:
    row, problem = contests.resolve(db, actor, ref), _problem(db, slug)
    if not contests.remove_problem(db, row, problem):
        raise NotFound(f"no problem '{problem.slug}' in contest '{row.slug}'")
    target = f"contest {row.slug}: {problem.slug}"
    record(db, actor, "contest_problem_removed", target, {}, row.id)
    return row


def register(db: Session, actor: User, ref: str, team: str, status: str) -> Contest:
    """Registers the team (approved, or pending) in the contest."""
    row, found = contests.resolve(db, actor, ref), _team(db, team)
    contests.register(db, row, found.id, status)
    target = f"contest {row.slug}: {found.name}"
    record(db, actor, "registration", target, {"status": status}, row.id)
    return row


def withdraw(db: Session, actor: User, ref: str, team: str) -> Contest:
    row, found = contests.resolve(db, actor, ref), _team(db, team)
    if not contests.unregister(db, row, found.id):
        raise NotFound(f"team '{found.name}' is not registered in contest '{row.slug}'")
    record(db, actor, "registration_removed", f"contest {row.slug}: {found.name}", {}, row.id)
    return row


def _problem(db: Session, slug: str) -> Problem:
    found = db.scalar(select(Problem).where(Problem.slug == slug.strip()))
    if found is None:
        raise NotFound(f"no problem '{slug.strip()[:64]}'")
    return found


def _team(db: Session, name: str) -> Team:
    found = db.scalar(select(Team).where(Team.name == name.strip()))
    if found is None or found.system:
        raise NotFound(f"no team '{name.strip()[:100]}'")
    return found
