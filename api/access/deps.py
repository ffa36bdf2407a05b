"""FastAPI dependencies: the database session and who is asking."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from typing import Annotated

import anyio
from fastapi import Depends, Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from sqlalchemy.orm import Session

from api.access import tokencache
from api.access.auth import check_token, is_stale, session_user, token_hash, touch_token
from api.access.caller import Caller
from api.db.models import User, utcnow
from api.db.session import session_factory, session_scope
from api.errors import Forbidden, ServiceError
from api.settings import Settings, get_settings

# The dependencies that do no I/O are `async def`: FastAPI runs a plain `def` one on a
# worker thread, and each such hop cost about 5 % of a cached read's CPU.


def client_address(request: Request) -> str:
    """The client's address, "unknown" when the server was not told it."""
    return request.client.host if request.client else "unknown"


async def settings_dep(request: Request) -> Settings:
    """The settings the app was made with (create_app), else the environment's."""
    return getattr(request.app.state, "settings", None) or get_settings()


async def db_dep(settings: Annotated[Settings, Depends(settings_dep)]) -> AsyncIterator[Session]:
    """session_scope's commit-or-rollback and close in one worker-thread hop, and none
    when the request used no connection (a session does no I/O until its first query)."""
    db = session_factory(settings.database_url)()
    try:
        yield db
    except BaseException:
        await _end(db, commit=False)
        raise
    await _end(db, commit=True)


async def _end(db: Session, commit: bool) -> None:
    if db.get_transaction() is None and not (db.new or db.dirty or db.deleted):
        db.close()  # never connected: nothing to send
        return
    with anyio.CancelScope(shield=True):  # a client gone must not leak the connection
        await run_in_threadpool(_finish, db, commit)


def _finish(db: Session, commit: bool) -> None:
    try:
        if commit:
            db.commit()
        else:
            db.rollback()
    except BaseException:
        db.rollback()
        raise
    finally:
        db.close()


# scope="function": the session commits (or rolls back) when the route returns, before
# the response is sent, so a 2xx always means the write is in the database. The default
# scope would commit after the response: a client's next request could miss the write.
DB = Annotated[Session, Depends(db_dep, scope="function")]
Config = Annotated[Settings, Depends(settings_dep)]


class Unauthorized(ServiceError):
    status = 401


SESSION_KEY = "sid"  # the web session's random id, in the signed session cookie


def bearer(request: Request) -> str | None:
    """The token of `Authorization: Bearer TOKEN`; None without the header."""
    header = request.headers.get("authorization", "")
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("the Authorization header must be 'Bearer <token>'")
    return token.strip()


def _cached(request: Request, db: Session, token: str) -> tokencache.Entry | None:
    return tokencache.lookup(db, token_hash(token)) if request.method in SAFE_METHODS else None


def _fresh_entry(request: Request, db: Session) -> tokencache.Entry | None:
    """This process's recent check of the request's token, when a read may use it as is."""
    token = bearer(request)
    entry = _cached(request, db, token) if token else None
    return entry if entry is not None and not is_stale(entry.last_used_at) else None


async def optional_user(request: Request, db: DB, settings: Config) -> User | None:
    """request_user; async: a read with a recently checked token needs no I/O, so no
    worker-thread hop (about 5 % of a cached read's CPU)."""
    entry = _fresh_entry(request, db)
    if entry is not None:
        return tokencache.attach_user(db, entry)
    return await run_in_threadpool(request_user, request, db, settings)


async def optional_caller(request: Request, db: DB, settings: Config) -> Caller | None:
    """optional_user for the hot reads (api.reads.readcache): from the token cache without an
    ORM row, so a cached answer needs neither a session nor a worker thread."""
    entry = _fresh_entry(request, db)
    if entry is not None:
        return Caller.of_entry(entry)
    return await run_in_threadpool(_caller, request, db, settings)


def _caller(request: Request, db: Session, settings: Settings) -> Caller | None:
    user = request_user(request, db, settings)
    return Caller.of_user(user) if user is not None else None  # user.team may load


def request_user(request: Request, db: Session, settings: Settings) -> User | None:
    """From `Authorization: Bearer TOKEN`, else from the web session cookie."""
    token = bearer(request)
    if token is not None:
        return token_user(db, settings, token, _cached(request, db, token))
    user = session_viewer(request, db)
    if user is not None and request.url.path.startswith("/api/"):
        check_api_csrf(request)
    return user


def user_or_none(request: Request, db: Session, settings: Settings) -> User | None:
    """request_user, a wrong token counting as nobody: for answers that never refuse
    with 401 on their own (/healthz, /metrics' plain-text refusal)."""
    try:
        return request_user(request, db, settings)
    except Unauthorized:
        return None


def token_user(db: Session, settings: Settings, token: str, entry: tokencache.Entry | None) -> User:
    """`entry`: this process's recent check of the token (api.access.tokencache: at most TTL_S
    stale), which only a read may use; a write checks the database."""
    digest = token_hash(token)
    if entry is None:
        gen = tokencache.generation()
        check = check_token(db, token)
        if check.row is None or check.refusal:
            raise Unauthorized(check.refusal)
        tokencache.remember(db, digest, check.row, check.row.user, gen)
        last_used, token_id, user = check.row.last_used_at, check.row.id, check.row.user
    else:
        last_used, token_id = entry.last_used_at, entry.token_id
        user = tokencache.attach_user(db, entry)
    if is_stale(last_used):  # its own short transaction: at most once a minute
        with session_scope(settings.database_url) as own:
            touch_token(own, token_id)
        tokencache.touched(digest, str(db.get_bind().url), utcnow())
    return user


CSRF_HEADER = "x-csrf-token"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def check_api_csrf(request: Request) -> None:
    """A write to the API with only the session cookie must carry the session's CSRF
    token in `X-CSRF-Token`: a browser sends the cookie with another site's request too
    (SameSite=Lax was the only guard). Bearer tokens need nothing: no browser sends one."""
    if request.method in SAFE_METHODS:
        return
    sent = request.headers.get(CSRF_HEADER, "")
    expected = request.session.get("csrf")
    if not (
        isinstance(expected, str)
        and expected
        and secrets.compare_digest(sent.encode(), expected.encode())
    ):
        raise Forbidden(
            "an API write with the login cookie needs the page's CSRF token in the "
            "X-CSRF-Token header (or send 'Authorization: Bearer <token>')"
        )


def session_viewer(request: Request, db: Session) -> User | None:
    """The user of a live server-side web session (not ended, not expired), if any."""
    session_id = request.session.get(SESSION_KEY) if "session" in request.scope else None
    return session_user(db, session_id) if isinstance(session_id, str) else None


async def current_user(user: Annotated[User | None, Depends(optional_user)]) -> User:
    if user is None:
        raise Unauthorized("log in or send 'Authorization: Bearer <token>'")
    return user


async def current_caller(caller: Annotated[Caller | None, Depends(optional_caller)]) -> Caller:
    if caller is None:
        raise Unauthorized("log in or send 'Authorization: Bearer <token>'")
    return caller


async def admin_user(user: Annotated[User, Depends(current_user)]) -> User:
    if not user.is_admin:
        raise Forbidden("this needs an organizer's account")
    return user


# A row id in a path: the id columns are INTEGER (32 bits on PostgreSQL), and a larger
# number was a 500 there; api.access.pathguard answers such paths first, this says so in the
# schema too.
Id = Annotated[int, Path(ge=1, le=2**31 - 1)]
Viewer = Annotated[User | None, Depends(optional_user)]
Contestant = Annotated[User, Depends(current_user)]
Admin = Annotated[User, Depends(admin_user)]
Reader = Annotated[Caller | None, Depends(optional_caller)]  # the hot reads' Viewer
ContestantReader = Annotated[Caller, Depends(current_caller)]
# Which contest (api.actions.contests): its slug or id; absent: the caller's default.
ContestRef = Annotated[str | None, Query(max_length=64, description="a contest's slug or id")]
