"""The organizers' contests API under /api/v1/admin/contests (api.actions.contests): make a
contest, make one current, put problems in it (following the current version or pinned
to one) and register teams. Settings of one contest: GET/PUT /admin/contest?contest=."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from pydantic import Field

from api.access.deps import DB, Admin
from api.actions import admin, contest_admin, contests
from api.routes.admin import Body, UtcStamp

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
    row = contest_admin.create(db, user, body.slug, body.title, body.start_at)
    return admin.contest_full(db, row)


@router.post("/{ref}/current")
def make_current(ref: str, user: Admin, db: DB) -> dict[str, Any]:
    """A request that names no contest means this one from now on."""
    return admin.contest_full(db, contest_admin.make_current(db, user, ref))


@router.put("/{ref}/problems/{slug}")
def put_problem(ref: str, slug: str, body: ProblemIn, user: Admin, db: DB) -> dict[str, Any]:
    row = contest_admin.put_problem(db, user, ref, slug, body.version)
    return admin.contest_full(db, row)


@router.delete("/{ref}/problems/{slug}", status_code=204)
def delete_problem(ref: str, slug: str, user: Admin, db: DB) -> Response:
    contest_admin.remove_problem(db, user, ref, slug)
    return Response(status_code=204)


@router.put("/{ref}/teams/{team}")
def put_team(ref: str, team: str, body: RegistrationIn, user: Admin, db: DB) -> dict[str, Any]:
    """Registers the team (approved, or pending) in the contest."""
    return admin.contest_full(db, contest_admin.register(db, user, ref, team, body.status))


@router.delete("/{ref}/teams/{team}", status_code=204)
def delete_team(ref: str, team: str, user: Admin, db: DB) -> Response:
    contest_admin.withdraw(db, user, ref, team)
    return Response(status_code=204)
