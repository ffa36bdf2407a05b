"""Pages for organizers: teams, users, API tokens and revoking access."""

from __future__ import annotations

from functools import partial
from typing import Annotated

from fastapi import Form, Request
from fastapi.responses import Response
from sqlalchemy import select
from sqlalchemy.orm import Session

from api.access import auth
from api.access.deps import DB, Admin
from api.actions import admin
from api.db.models import Team, User
from api.errors import ServiceError
from api.pages.common import render, router
from api.pages.organizer import _act
from api.routes.tokens import revoke_all, revoke_one


def _admin_accounts(
    request: Request,
    db: Session,
    user: User,
    status: int = 200,
    error: str = "",
    new_token: dict[str, str] | None = None,
) -> Response:
    return render(
        request,
        "admin/accounts.html",
        user,
        status,
        teams=list(db.scalars(select(Team).order_by(Team.name))),
        users=list(db.scalars(select(User).order_by(User.username))),
        tokens=auth.list_tokens(db),
        error=error or None,
        new_token=new_token,
    )


@router.get("/admin/accounts")
def admin_accounts(request: Request, user: Admin, db: DB) -> Response:
    return _admin_accounts(request, db, user)


@router.post("/admin/teams")
def admin_create_team(
    request: Request, user: Admin, db: DB, name: Annotated[str, Form()] = ""
) -> Response:
    def act() -> str:
        return f"team '{admin.create_team(db, name, user).name}' created"

    return _act(request, db, "/admin/accounts", act, partial(_admin_accounts, request, db, user))


@router.post("/admin/users")
def admin_create_user(
    request: Request,
    user: Admin,
    db: DB,
    username: Annotated[str, Form()] = "",
    password: Annotated[str, Form()] = "",
    team: Annotated[str, Form()] = "",
    is_admin: Annotated[str, Form()] = "",
) -> Response:
    def act() -> str:
        new = admin.create_user(db, username, password, team or None, bool(is_admin), user)
        return f"user '{new.username}' created"

    return _act(request, db, "/admin/accounts", act, partial(_admin_accounts, request, db, user))


@router.post("/admin/tokens")
def admin_token(
    request: Request,
    user: Admin,
    db: DB,
    username: Annotated[str, Form()] = "",
    name: Annotated[str, Form()] = "",
    expires_in_days: Annotated[str, Form()] = "",
) -> Response:
    """The token is in this response only (not stored, not in the session, not cached)."""
    try:
        until = auth.expiry(_days(expires_in_days), None)
        token = admin.issue_token(db, username.strip(), name.strip(), user, until)
    except ServiceError as exc:
        db.rollback()
        return _admin_accounts(request, db, user, exc.status, exc.message)
    db.commit()
    shown = {"username": username.strip(), "token": token}
    return _admin_accounts(request, db, user, new_token=shown)


def _days(text: str) -> float | None:
    try:
        days = float(text) if text.strip() else None
    except ValueError:
        days = -1.0
    if days is not None and not 0 < days <= 3660:
        raise ServiceError(f"expiry in days must be a number from 0 to 3660, not '{text}'", 422)
    return days


@router.post("/admin/tokens/{token_id}/revoke")
def admin_revoke_token(token_id: int, request: Request, user: Admin, db: DB) -> Response:
    def act() -> str:
        row = revoke_one(db, user, token_id, owner=None)
        return f"token {row['id']} of '{row['username']}' revoked"

    return _act(request, db, "/admin/accounts", act, partial(_admin_accounts, request, db, user))


@router.post("/admin/users/{username}/revoke")
def admin_revoke_access(username: str, request: Request, user: Admin, db: DB) -> Response:
    def act() -> str:
        target = auth.user_named(db, username)
        if target is None:
            raise ServiceError(f"no user '{username}'", 404)
        revoked = revoke_all(db, user, target)
        return (
            f"'{username}': {revoked['tokens']} token(s) revoked, "
            f"{revoked['sessions']} web session(s) ended"
        )

    return _act(request, db, "/admin/accounts", act, partial(_admin_accounts, request, db, user))
