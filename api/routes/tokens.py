"""API tokens and access: organizers list and revoke anyone's (and end a user's web
sessions), a user lists and revokes their own. A listing never shows a token."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from sqlalchemy.orm import Session

from api.access import auth
from api.access.deps import DB, Admin, Contestant, Id
from api.actions.audit import record
from api.db.models import User
from api.errors import NotFound

admin_router = APIRouter(prefix="/api/v1/admin", tags=["admin"])
own_router = APIRouter(prefix="/api/v1", tags=["contestants"])


@admin_router.get("/tokens")
def list_tokens(user: Admin, db: DB, username: str | None = None) -> list[dict[str, Any]]:
    """Every token, or one user's (`?username=`): name, created, expires, last used,
    revoked."""
    return auth.list_tokens(db, _user(db, username) if username else None)


@admin_router.delete("/tokens/{token_id}")
def revoke_token(token_id: Id, user: Admin, db: DB) -> dict[str, Any]:
    return revoke_one(db, user, token_id, owner=None)


@admin_router.post("/users/{username}/revoke")
def revoke_access(username: str, user: Admin, db: DB) -> dict[str, Any]:
    """Revoke every token of the user and end their web sessions (log them out)."""
    return revoke_all(db, user, _user(db, username))


@own_router.get("/tokens")
def my_tokens(user: Contestant, db: DB) -> list[dict[str, Any]]:
    return auth.list_tokens(db, user)


@own_router.delete("/tokens/{token_id}")
def revoke_my_token(token_id: Id, user: Contestant, db: DB) -> dict[str, Any]:
    return revoke_one(db, user, token_id, owner=user)


def revoke_one(db: Session, actor: User, token_id: int, owner: User | None) -> dict[str, Any]:
    row = auth.revoke_token(db, token_id, owner)
    if row is None:
        raise NotFound(f"no token {token_id}" + (" of yours" if owner else ""))
    record(db, actor, "revoke_token", row.user.username, {"id": row.id, "name": row.name})
    db.commit()
    return {"id": row.id, "username": row.user.username, "revoked": True}


def revoke_all(db: Session, actor: User, target: User) -> dict[str, Any]:
    tokens, sessions = auth.revoke_access(db, target)
    detail = {"tokens": tokens, "sessions": sessions}
    record(db, actor, "revoke_access", target.username, detail)
    db.commit()
    return {"username": target.username, **detail}


def _user(db: Session, username: str) -> User:
    found = auth.user_named(db, username)
    if found is None:
        raise NotFound(f"no user '{username}'")
    return found
