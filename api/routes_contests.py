"""The organizers' contests API under /api/v1/admin/contests (api.contests): make a
contest, make one current, put problems in it (following the current version or pinned
to one) and register teams. Settings of one contest: GET/PUT /admin/contest?contest=."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from pydantic import Field
from sqlalchemy import select

from api import admin, contests
from api.audit import record
from api.db.models import Problem, ProblemVersion, Team
from api.deps import DB, Admin
from api.errors import NotFound
from api.routes_admin import Body, UtcStamp

router = APIRouter(prefix="/api/v1/admin/contests", tags=["admin"])


class ContestNew(Body):
    slug: str = Field(max_length=64)
    title: str = Field(default="", max_length=200)
    start_at: UtcStamp = None  # without one the contest is open at once


class ProblemIn(Body):
    version: int | None = Field(default=None, ge=1, le=2**31 - 1)  # None: follow the current


class RegistrationIn(Body):
    status: str = Field(default="approved", max_length=16)


@router.get("")
def list_contests(user: Admin, db: DB) -> list[dict[str, Any]]:
    return [admin.contest_full(db, c) for c in contests.visible(db, user)]


@router.post("", status_code=201)
def create_contest(body: ContestNew, user: Admin, db: DB) -> dict[str, Any]:
    row = contests.create(db, body.slug, body.title, body.start_at)
    record(db, user, "create_contest", f"contest {row.slug}", {"title": row.title}, row.id)
    return admin.contest_full(db, row)


@router.post("/{ref}/current")
def make_current(ref: str, user: Admin, db: DB) -> dict[str, Any]:
    """A request that names no contest means this one from now on."""
    row = _contest(db, user, ref)
    contests.make_current(db, row)
    record(db, user, "current_contest", f"contest {row.slug}", {}, row.id)
    return admin.contest_full(db, row)


@router.put("/{ref}/problems/{slug}")
def put_problem(ref: str, slug: str, body: ProblemIn, user: Admin, db: DB) -> dict[str, Any]:
    row, problem = _contest(db, user, ref), _problem(db, slug)
    if body.version is not None:
        found = db.scalar(
            select(ProblemVersion.id).where(
                ProblemVersion.problem_id == problem.id, ProblemVersion.number == body.version
            )
        )
        if found is None:
            raise NotFound(f"no version {body.version} of '{slug}'")
    contests.add_problem(db, row, problem, found if body.version is not None else None)
    detail = {"version": body.version or "current"}
    record(db, user, "contest_problem", f"contest {row.slug}: {slug}", detail, row.id)
    return admin.contest_full(db, row)


@router.delete("/{ref}/problems/{slug}", status_code=204)
def delete_problem(ref: str, slug: str, user: Admin, db: DB) -> Response:
    row, problem = _contest(db, user, ref), _problem(db, slug)
    if not contests.remove_problem(db, row, problem):
        raise NotFound(f"no problem '{slug}' in contest '{row.slug}'")
    record(db, user, "contest_problem_removed", f"contest {row.slug}: {slug}", {}, row.id)
    return Response(status_code=204)


@router.put("/{ref}/teams/{team}")
def put_team(ref: str, team: str, body: RegistrationIn, user: Admin, db: DB) -> dict[str, Any]:
    """Registers the team (approved, or pending) in the contest."""
    row, found = _contest(db, user, ref), _team(db, team)
    contests.register(db, row, found.id, body.status)
    detail = {"status": body.status}
    record(db, user, "registration", f"contest {row.slug}: {found.name}", detail, row.id)
    return admin.contest_full(db, row)


@router.delete("/{ref}/teams/{team}", status_code=204)
def delete_team(ref: str, team: str, user: Admin, db: DB) -> Response:
    row, found = _contest(db, user, ref), _team(db, team)
    if not contests.unregister(db, row, found.id):
        raise NotFound(f"team '{team}' is not registered in contest '{row.slug}'")
    record(db, user, "registration_removed", f"contest {row.slug}: {found.name}", {}, row.id)
    return Response(status_code=204)


def _contest(db: DB, user: Admin, ref: str) -> Any:
    return contests.resolve(db, user, ref)


def _problem(db: DB, slug: str) -> Problem:
    found = db.scalar(select(Problem).where(Problem.slug == slug))
    if found is None:
        raise NotFound(f"no problem '{slug[:64]}'")
    return found


def _team(db: DB, name: str) -> Team:
    found = db.scalar(select(Team).where(Team.name == name))
    if found is None or found.system:
        raise NotFound(f"no team '{name[:100]}'")
    return found
