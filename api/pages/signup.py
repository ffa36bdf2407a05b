"""The sign-up page (api.access.signup): an account of one's own, where the contest allows it;
and the organizers' approve, lock and password-reset buttons on the accounts page."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Annotated

from fastapi import Form, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from sqlalchemy.orm import Session

from api.access import signup
from api.access.deps import DB, Admin, Config, client_address
from api.access.login import hash_slot
from api.actions import contests
from api.db.models import User
from api.errors import ServiceError
from api.pages.common import render, router
from api.pages.organizer import _act
from api.pages.organizer_accounts import _admin_accounts

ACCOUNTS = "/admin/accounts"


def _page(request: Request, mode: str, status: int = 200, **shown: object) -> Response:
    shown = {"made": None, "username": "", "team": "", "contest": "", **shown}
    return render(request, "signup.html", None, status, mode=mode, **shown)


def _mode(db: Session, ref: str) -> str:
    """The sign-up mode of the contest `ref` names (empty: the current one)."""
    found = contests.find(db, ref) if ref else contests.current(db)
    return found.signup if found is not None else "closed"


@router.get("/signup")
def signup_page(request: Request, db: DB, contest: str = "") -> Response:
    return _page(request, _mode(db, contest[:64]), contest=contest[:64])


@router.post("/signup")
async def signup_form(
    request: Request,
    settings: Config,
    db: DB,
    username: Annotated[str, Form()] = "",
    password: Annotated[str, Form()] = "",
    team: Annotated[str, Form()] = "",
    invite: Annotated[str, Form()] = "",
    contest: Annotated[str, Form()] = "",
) -> Response:
    """The invitation code is in this response only (as a new API token is). The
    password is hashed in one of the logins' hash slots (api.access.login.hash_slot)."""
    contest = contest.strip()[:64]
    async with hash_slot(request.app, settings):
        return await run_in_threadpool(
            _sign_up, request, settings, db, (username, password, team, invite), contest
        )


def _sign_up(
    request: Request, settings: Config, db: Session, form: tuple[str, str, str, str], contest: str
) -> Response:
    username, password, team, invite = form
    mode = _mode(db, contest)
    try:
        address = client_address(request)
        admit = partial(signup.admit, settings, address)
        made = signup.sign_up(db, username, password, team, invite, admit, contest or None)
    except ServiceError as exc:
        db.rollback()
        return _page(request, mode, exc.status, error=exc.message, username=username, team=team,
                     contest=contest)  # fmt: skip
    db.commit()
    return _page(request, mode, 201, made=made, contest=contest)


def _accounts_act(request: Request, db: Session, user: User, act: Callable[[], str]) -> Response:
    return _act(request, db, ACCOUNTS, act, partial(_admin_accounts, request, db, user))


@router.post("/admin/users/{username}/approve")
def approve_page(username: str, request: Request, user: Admin, db: DB) -> Response:
    return _accounts_act(request, db, user, lambda: _said(signup.approve(db, user, username)))


@router.post("/admin/users/{username}/lock")
def lock_page(
    username: str, request: Request, user: Admin, db: DB, locked: Annotated[str, Form()] = "1"
) -> Response:
    def act() -> str:
        return _said(signup.lock(db, user, username, locked == "1"))

    return _accounts_act(request, db, user, act)


@router.post("/admin/users/{username}/password")
def password_page(
    username: str, request: Request, user: Admin, db: DB, password: Annotated[str, Form()] = ""
) -> Response:
    def act() -> str:
        signup.reset_password(db, user, username, password)
        return f"'{username}': new password set; its web sessions ended"

    return _accounts_act(request, db, user, act)


def _said(account: dict) -> str:
    state = "locked" if account["locked"] else ("pending" if account["pending"] else "active")
    return f"'{account['username']}' is {state}"
