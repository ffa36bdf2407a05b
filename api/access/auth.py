"""Passwords (argon2 via argon2-cffi), API tokens and web sessions (both random, stored
as SHA-256 only: the database never holds anything that logs in)."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import delete, or_, select, update
from sqlalchemy.orm import Session, joinedload

from api.access import tokencache
from api.db.models import ApiToken, User, WebSession, aware, utcnow
from api.errors import ServiceError

# OWASP's argon2id choice (m = 19 MiB, t = 2, p = 1): about 25 ms and 19 MiB a hash,
# where argon2-cffi's default (64 MiB, t = 3, p = 4) let 40 parallel logins take the API
# to 873 MB. Memory per login is what an anonymous flood multiplies; the hash count at
# once is bounded too (api.access.login). Older hashes still verify and are renewed at login.
_hasher = PasswordHasher(time_cost=2, memory_cost=19456, parallelism=1)
_DUMMY_HASH = _hasher.hash("no such user")
TOKEN_PREFIX = "mr_"
TOUCH_EVERY = timedelta(minutes=1)  # last_used_at is written at most this often


# --- passwords ----------------------------------------------------------------------------


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(stored: str, password: str) -> tuple[bool, str | None]:
    """(matches, a renewed hash when the stored one has older parameters). Always one hash
    of the same cost, stored hash or not: no username probing by timing."""
    try:
        ok = _hasher.verify(stored or _DUMMY_HASH, password) and bool(stored)
    except (VerificationError, InvalidHashError):
        return False, None
    return ok, (_hasher.hash(password) if ok and _hasher.check_needs_rehash(stored) else None)


def user_named(db: Session, username: str) -> User | None:
    return db.scalar(select(User).where(User.username == username))


# --- API tokens ---------------------------------------------------------------------------


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token(db: Session, user: User, name: str = "", expires_at: datetime | None = None) -> str:
    """Create a token for `user`; the plain token exists only in this return value."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    db.add(
        ApiToken(
            user_id=user.id,
            token_hash=token_hash(token),
            name=name,
            expires_at=utc(expires_at) if expires_at else None,
        )
    )
    db.flush()
    return token


@dataclass(frozen=True)
class TokenCheck:
    row: ApiToken | None
    refusal: str  # why the token is refused; "" when it is good


def check_token(db: Session, token: str) -> TokenCheck:
    row = db.scalar(select(ApiToken).where(ApiToken.token_hash == token_hash(token)))
    if row is None:
        return TokenCheck(None, "this token is not valid (unknown)")
    if row.revoked:
        return TokenCheck(row, "this token was revoked; ask the organizers for a new one")
    if row.expires_at is not None and aware(row.expires_at) <= utcnow():
        when = aware(row.expires_at).strftime("%Y-%m-%d %H:%M UTC")
        return TokenCheck(row, f"this token expired at {when}; ask the organizers for a new one")
    return TokenCheck(row, blocked(row.user) or "")


def blocked(user: User) -> str | None:
    """Why `user` may not log in (locked, or pending); None when nothing blocks it."""
    if user.locked_at is not None:
        return "this account is locked; ask the organizers"
    if user.pending:
        return "this account waits for an organizer's approval"
    return None


def is_stale(last_used_at: datetime | None) -> bool:
    """Whether a token's last use is to be written again (at most once a minute)."""
    return last_used_at is None or utcnow() - aware(last_used_at) >= TOUCH_EVERY


def touch_token(db: Session, token_id: int) -> None:
    """Note the use; one conditional UPDATE, so parallel requests write it once."""
    now = utcnow()
    db.execute(
        update(ApiToken)
        .where(
            ApiToken.id == token_id,
            or_(ApiToken.last_used_at.is_(None), ApiToken.last_used_at < now - TOUCH_EVERY),
        )
        .values(last_used_at=now)
        .execution_options(memorace_bookkeeping=True)  # no cache keeps it (api.reads.readcache)
    )


def list_tokens(db: Session, user: User | None = None) -> list[dict[str, Any]]:
    """Every token (of `user`), newest first; never the token or its hash."""
    query = select(ApiToken).options(joinedload(ApiToken.user)).order_by(ApiToken.id.desc())
    if user is not None:
        query = query.where(ApiToken.user_id == user.id)
    now = utcnow()
    return [
        {
            "id": t.id,
            "username": t.user.username,
            "name": t.name,
            "created_at": iso(t.created_at),
            "expires_at": iso(t.expires_at),
            "last_used_at": iso(t.last_used_at),
            "revoked": t.revoked,
            "expired": t.expires_at is not None and aware(t.expires_at) <= now,
        }
        for t in db.scalars(query)
    ]


def revoke_token(db: Session, token_id: int, owner: User | None = None) -> ApiToken | None:
    """Revoke one token (only `owner`'s when given); None when there is no such token."""
    row = db.get(ApiToken, token_id)
    if row is None or (owner is not None and row.user_id != owner.id):
        return None
    row.revoked = True
    db.flush()
    tokencache.clear()  # this process at once; the others by its news (api.reads.readcache)
    return row


def revoke_access(db: Session, user: User, tokens: bool = True) -> tuple[int, int]:
    """Revoke every token of `user` (unless not `tokens`) and end every web session:
    (tokens, sessions)."""
    revoked = 0
    if tokens:
        revoked = db.execute(
            update(ApiToken)
            .where(ApiToken.user_id == user.id, ApiToken.revoked.is_(False))
            .values(revoked=True)
        ).rowcount  # type: ignore[attr-defined]
    sessions = db.execute(
        update(WebSession)
        .where(WebSession.user_id == user.id, WebSession.ended_at.is_(None))
        .values(ended_at=utcnow())
    )
    tokencache.clear()
    return revoked, sessions.rowcount  # type: ignore[attr-defined]


def utc(stamp: datetime) -> datetime:
    """In UTC: an offset is converted, a naive stamp is taken as UTC. SQLite keeps no
    offset (it stores the clock time), so every stamp is converted before it is stored."""
    return aware(stamp).astimezone(UTC)


def iso(stamp: datetime | None) -> str | None:
    return aware(stamp).isoformat() if stamp else None


def expiry(in_days: float | None, at: datetime | None) -> datetime | None:
    """A new token's expiry: `in_days` from now, or the moment `at`; None = never."""
    if in_days is not None and at is not None:
        raise ServiceError("give expires_in_days or expires_at, not both", 422)
    if in_days is not None:
        return utcnow() + timedelta(days=in_days)
    if at is None:
        return None
    at = utc(at)
    if at <= utcnow():
        raise ServiceError(f"expires_at {at.isoformat()} is not in the future", 422)
    return at


# --- web sessions -------------------------------------------------------------------------


def start_session(db: Session, user: User, ttl_s: float) -> str:
    """A server-side session; the plain id (for the signed cookie) is only returned."""
    session_id = secrets.token_urlsafe(32)
    now = utcnow()
    db.execute(  # this user's sessions that can never log in again
        delete(WebSession).where(
            WebSession.user_id == user.id,
            or_(WebSession.ended_at.is_not(None), WebSession.expires_at < now),
        )
    )
    db.add(
        WebSession(
            session_hash=token_hash(session_id),
            user_id=user.id,
            expires_at=now + timedelta(seconds=ttl_s),
        )
    )
    db.flush()
    return session_id


def session_user(db: Session, session_id: str) -> User | None:
    row = db.scalar(select(WebSession).where(WebSession.session_hash == token_hash(session_id)))
    if row is None or row.ended_at is not None or aware(row.expires_at) <= utcnow():
        return None
    return row.user if row.user.can_log_in else None  # locked meanwhile, or pending


def end_session(db: Session, session_id: str) -> None:
    db.execute(
        update(WebSession)
        .where(WebSession.session_hash == token_hash(session_id), WebSession.ended_at.is_(None))
        .values(ended_at=utcnow())
    )
