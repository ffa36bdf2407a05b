"""The organizers' contests page (api.contests): every contest with its problems and
teams; make a contest, make one current, add or remove a problem (following its current
version or pinned to one), register a team (approved or pending) or withdraw it."""

from __future__ import annotations

from functools import partial
from typing import Annotated

from fastapi import Form, Request
from fastapi.responses import Response
from sqlalchemy import select
from sqlalchemy.orm import Session

from api import admin, contests
from api.audit import record
from api.db.models import Problem, ProblemVersion, Team, User
from api.deps import DB, Admin
from api.errors import NotFound
from api.pages.common import render, router
from api.pages.organizer import _act, _stamp

PAGE = "/admin/contests"


def _page(
    request: Request, db: Session, user: User, status: int = 200, error: str = ""
) -> Response:
    rows = [admin.contest_full(db, c) for c in contests.visible(db, user)]
    every_problem = list(db.scalars(select(Problem.slug).order_by(Problem.slug)))
    teams = list(db.scalars(select(Team.name).where(Team.system.is_(False)).order_by(Team.name)))
    return render(request, "admin/contests.html", user, status, contests=rows,
                  problems=every_problem, teams=teams, error=error or None)  # fmt: skip


def _run(request: Request, db: Session, user: User, action: partial[str]) -> Response:
    return _act(request, db, PAGE, action, partial(_page, request, db, user))


@router.get(PAGE)
def contests_page(request: Request, user: Admin, db: DB) -> Response:
    return _page(request, db, user)


@router.post(PAGE)
def create_contest(
    request: Request,
    user: Admin,
    db: DB,
    slug: Annotated[str, Form()] = "",
    title: Annotated[str, Form()] = "",
    start_at: Annotated[str, Form()] = "",
) -> Response:
    def act() -> str:
        row = contests.create(db, slug, title, _stamp("start", start_at))
        record(db, user, "create_contest", f"contest {row.slug}", {"title": row.title}, row.id)
        return f"contest '{row.slug}' made: set its window and sign-up on the Contest page"

    return _run(request, db, user, partial(act))


@router.post(PAGE + "/{ref}/current")
def make_current(request: Request, ref: str, user: Admin, db: DB) -> Response:
    def act() -> str:
        row = contests.resolve(db, user, ref)
        contests.make_current(db, row)
        record(db, user, "current_contest", f"contest {row.slug}", {}, row.id)
        return f"'{row.slug}' is the current contest"

    return _run(request, db, user, partial(act))


@router.post(PAGE + "/{ref}/problems")
def put_problem(
    request: Request,
    ref: str,
    user: Admin,
    db: DB,
    problem: Annotated[str, Form()] = "",
    version: Annotated[str, Form()] = "",
    remove: Annotated[str, Form()] = "",
) -> Response:
    def act() -> str:
        row = contests.resolve(db, user, ref)
        found = db.scalar(select(Problem).where(Problem.slug == problem.strip()))
        if found is None:
            raise NotFound(f"no problem '{problem.strip()[:64]}'")
        if remove:
            if not contests.remove_problem(db, row, found):
                raise NotFound(f"no problem '{found.slug}' in '{row.slug}'")
            record(db, user, "contest_problem_removed", f"contest {row.slug}: {found.slug}",
                   {}, row.id)  # fmt: skip
            return f"'{found.slug}' taken out of '{row.slug}'"
        pinned = _version(db, found, version.strip())
        contests.add_problem(db, row, found, pinned)
        detail = {"version": version.strip() or "current"}
        record(db, user, "contest_problem", f"contest {row.slug}: {found.slug}", detail, row.id)
        return f"'{found.slug}' is in '{row.slug}'"

    return _run(request, db, user, partial(act))


def _version(db: Session, problem: Problem, number: str) -> int | None:
    """The version numbered `number` ("" : none, follow the current one)."""
    if not number:
        return None
    found = None
    if number.isascii() and number.isdigit() and len(number) < 9:
        found = db.scalar(
            select(ProblemVersion.id).where(
                ProblemVersion.problem_id == problem.id, ProblemVersion.number == int(number)
            )
        )
    if found is None:
        raise NotFound(f"no version {number[:20]!r} of '{problem.slug}'")
    return found


@router.post(PAGE + "/{ref}/teams")
def put_team(
    request: Request,
    ref: str,
    user: Admin,
    db: DB,
    team: Annotated[str, Form()] = "",
    status: Annotated[str, Form()] = "approved",
    remove: Annotated[str, Form()] = "",
) -> Response:
    def act() -> str:
        row = contests.resolve(db, user, ref)
        found = db.scalar(select(Team).where(Team.name == team.strip()))
        if found is None or found.system:
            raise NotFound(f"no team '{team.strip()[:100]}'")
        target = f"contest {row.slug}: {found.name}"
        if remove:
            if not contests.unregister(db, row, found.id):
                raise NotFound(f"team '{found.name}' is not in '{row.slug}'")
            record(db, user, "registration_removed", target, {}, row.id)
            return f"'{found.name}' withdrawn from '{row.slug}'"
        contests.register(db, row, found.id, status)
        record(db, user, "registration", target, {"status": status}, row.id)
        return f"'{found.name}' is {status} in '{row.slug}'"

    return _run(request, db, user, partial(act))
