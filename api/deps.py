"""FastAPI dependencies: the database session and who is asking."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from api.auth import check_token, session_user, token_is_stale, touch_token
from api.db.models import User
from api.db.session import session_scope
from api.errors import Forbidden, ServiceError
from api.settings import Settings, get_settings


def settings_dep(request: Request) -> Settings:
    """The settings the app was made with (create_app), else the environment's."""
    return getattr(request.app.state, "settings", None) or get_settings()


def db_dep(settings: Annotated[Settings, Depends(settings_dep)]) -> Iterator[Session]:
    with session_scope(settings.database_url) as db:
        yield db


# scope="function": the session commits (or rolls back) when the route returns, before
# the response is sent, so a 2xx always means the write is in the database. The default
# scope would commit after the response: a client's next request could miss the write.
DB = Annotated[Session, Depends(db_dep, scope="function")]
Config = Annotated[Settings, Depends(settings_dep)]


class Unauthorized(ServiceError):
    status = 401


SESSION_KEY = "sid"  # the web session's random id, in the signed session cookie


def optional_user(request: Request, db: DB, settings: Config) -> User | None:
    """From `Authorization: Bearer TOKEN`, else from the web session cookie."""
    header = request.headers.get("authorization", "")
    if header:
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthorized("the Authorization header must be 'Bearer <token>'")
        check = check_token(db, token.strip())
        if check.row is None or check.refusal:
            raise Unauthorized(check.refusal)
        if token_is_stale(check.row):  # its own short transaction: at most once a minute
            with session_scope(settings.database_url) as own:
                touch_token(own, check.row.id)
        return check.row.user
    return session_viewer(request, db)


def session_viewer(request: Request, db: Session) -> User | None:
    """The user of a live server-side web session (not ended, not expired), if any."""
    session_id = request.session.get(SESSION_KEY) if "session" in request.scope else None
    return session_user(db, session_id) if isinstance(session_id, str) else None


def current_user(user: Annotated[User | None, Depends(optional_user)]) -> User:
    if user is None:
        raise Unauthorized("log in or send 'Authorization: Bearer <token>'")
    return user


def admin_user(user: Annotated[User, Depends(current_user)]) -> User:
    if not user.is_admin:
        raise Forbidden("this needs an organizer's account")
    return user


Viewer = Annotated[User | None, Depends(optional_user)]
Contestant = Annotated[User, Depends(current_user)]
Admin = Annotated[User, Depends(admin_user)]
