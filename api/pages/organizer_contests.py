"""The organizers' contests page (api.actions.contests): every contest with its problems and
teams; make a contest, make one current, add or remove a problem (following its current
version or pinned to one), register a team (approved or pending) or withdraw it."""

from __future__ import annotations

from functools import partial
from typing import Annotated

from fastapi import Form, Request
from fastapi.responses import Response
from sqlalchemy import select
from sqlalchemy.orm import Session

from api.access.deps import DB, Admin
from api.actions import admin, contest_admin, contests
from api.db.models import Problem, Team, User
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
        row = contest_admin.create(db, user, slug, title, _stamp("start", start_at))
        return f"contest '{row.slug}' made: set its window and sign-up on the Contest page"

    return _run(request, db, user, partial(act))


@router.post(PAGE + "/{ref}/current")
def make_current(request: Request, ref: str, user: Admin, db: DB) -> Response:
    def act() -> str:
        return f"'{contest_admin.make_current(db, user, ref).slug}' is the current contest"

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
        slug = problem.strip()
        if remove:
            return (
                f"'{slug}' taken out of '{contest_admin.remove_problem(db, user, ref, slug).slug}'"
            )
        row = contest_admin.put_problem(db, user, ref, slug, _number(slug, version.strip()))
        return f"'{slug}' is in '{row.slug}'"

    return _run(request, db, user, partial(act))


def _number(slug: str, number: str) -> int | None:
    """The version number typed in the form ("": none, follow the current one)."""
    if not number:
        return None
    if number.isascii() and number.isdigit() and len(number) < 9:
        return int(number)
    raise NotFound(f"no version {number[:20]!r} of '{slug[:64]}'")


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
        name = team.strip()
        if remove:
            return f"'{name}' withdrawn from '{contest_admin.withdraw(db, user, ref, name).slug}'"
        row = contest_admin.register(db, user, ref, name, status)
        return f"'{name}' is {status} in '{row.slug}'"

    return _run(request, db, user, partial(act))
