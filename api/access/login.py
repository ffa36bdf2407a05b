"""Password logins under attack.

Failed logins are counted per account and per client address in the `login_throttle`
table, so every API process sees the same counts: a few failures are free, then each
key waits twice as long as before, and at LOCK_AFTER failures it is locked for LOCK_S.
A lock is always temporary (one more failure after it ends locks again), so an attacker
can slow an account's password login, never end it; API tokens and running sessions are
not affected. Counting happens before the hash, in one atomic statement, so parallel
guesses cannot overtake the lock. A success clears the account's count.

The audit log gets each lock of an account that exists and of an address
(`login_locked`), and one `login_failed` entry per client address and window that
counts its failed logins (`count`, of them `unknown_names`: names no account has).
A name nobody has is never written as a target: a flood of invented names is one
entry. A known and an unknown name run the same statements and the same hash, so
neither the answer nor its time says which names exist.

Each API process runs at most `login_hashes` password hashes at once, on as many
threads of its own; the others wait (without holding a thread) up to
`login_hash_wait_s`, then get 503: a login flood costs bounded memory and leaves the
request threads, and some CPU, to the rest of the service.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from fastapi import FastAPI
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import case, delete, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from api.access.auth import blocked, start_session, user_named, verify_password
from api.actions.audit import record, tally
from api.db.models import LoginThrottle, User, aware, utcnow
from api.db.session import session_scope
from api.errors import ServiceError
from api.settings import Settings

KEY_LENGTH = 200  # login_throttle.key
USERNAME_LENGTH = 100  # users.username


@dataclass(frozen=True)
class Key:
    key: str
    free: int  # failures before any wait
    lock_after: int  # failures that lock it
    target: str  # for the audit log


@dataclass(frozen=True)
class Result:
    user_id: int | None = None  # logged in, with this web session
    session_id: str = ""
    retry_after: float = 0.0  # refused before any hash: throttled (429), or busy (503)
    busy: bool = False
    refusal: str = ""  # the right password of an account that may not log in (403)


@dataclass(frozen=True)
class _Begun:
    counts: dict[str, int]  # this attempt's number per key
    user_id: int | None
    stored: str  # the user's password hash, "" when none
    blocked: str = ""  # why the account may not log in even with its password


async def attempt(
    app: FastAPI, settings: Settings, username: str, password: str, address: str
) -> Result:
    """One password login, throttled; on success a new web session."""
    keys = _keys(settings, username, address)
    wait = await run_in_threadpool(_locked_for, settings, keys)
    if wait:
        return Result(retry_after=wait)
    slots = _slots(app, settings)
    try:
        await asyncio.wait_for(slots.acquire(), settings.login_hash_wait_s)
    except TimeoutError:
        return Result(retry_after=max(1.0, settings.login_hash_wait_s), busy=True)
    try:
        begun = await run_in_threadpool(_begin, settings, keys, username)
        if isinstance(begun, float):
            return Result(retry_after=begun)
        ok, renewed = await asyncio.get_running_loop().run_in_executor(
            _hash_threads(app, settings), verify_password, begun.stored, password
        )
    finally:
        slots.release()
    return await run_in_threadpool(_finish, settings, keys, begun, ok, renewed, address)


def _keys(settings: Settings, username: str, address: str) -> list[Key]:
    username = username.replace("\x00", "\ufffd")  # PostgreSQL text holds no NUL
    return [
        Key(
            f"user:{username}"[:KEY_LENGTH],
            settings.login_free_failures,
            settings.login_lock_after,
            username[:KEY_LENGTH],
        ),
        Key(
            f"addr:{address}"[:KEY_LENGTH],
            settings.login_addr_free_failures,
            settings.login_addr_lock_after,
            f"address {address}"[:KEY_LENGTH],
        ),
    ]


@contextlib.asynccontextmanager
async def hash_slot(app: FastAPI, settings: Settings) -> AsyncIterator[None]:
    """One of the logins' few password-hash slots, for other work that hashes (a
    sign-up): 503 with Retry-After when none frees up in time, as a login is."""
    slots = _slots(app, settings)
    try:
        await asyncio.wait_for(slots.acquire(), settings.login_hash_wait_s)
    except TimeoutError:
        wait = str(max(1, round(settings.login_hash_wait_s)))
        raise Busy("too many passwords are being hashed now; try again shortly", wait) from None
    try:
        yield
    finally:
        slots.release()


class Busy(ServiceError):
    status = 503

    def __init__(self, message: str, retry_after: str):
        super().__init__(message)
        self.retry_after = retry_after


def _slots(app: FastAPI, settings: Settings) -> asyncio.Semaphore:
    """One semaphore per app (its event loop), made on first use."""
    slots = getattr(app.state, "login_slots", None)
    if slots is None:
        slots = app.state.login_slots = asyncio.Semaphore(max(1, settings.login_hashes))
    return slots


def _hash_threads(app: FastAPI, settings: Settings) -> ThreadPoolExecutor:
    """Hashes run on these few threads only: glibc keeps a freed 19 MiB block in the
    thread's arena, so hashing on any of the 40 request threads would keep 40 of them."""
    pool = getattr(app.state, "login_hash_threads", None)
    if pool is None:
        pool = app.state.login_hash_threads = ThreadPoolExecutor(
            max(1, settings.login_hashes), thread_name_prefix="password-hash"
        )
    return pool


def _locked_for(settings: Settings, keys: list[Key]) -> float:
    """Seconds until every key may try again (0 = now)."""
    with session_scope(settings.database_url) as db:
        stamps = db.scalars(
            select(LoginThrottle.locked_until).where(LoginThrottle.key.in_([k.key for k in keys]))
        )
        return _seconds_until(max((aware(s) for s in stamps if s), default=None))


def _seconds_until(stamp: datetime | None) -> float:
    return max(0.0, (stamp - utcnow()).total_seconds()) if stamp else 0.0


def _begin(settings: Settings, keys: list[Key], username: str) -> _Begun | float:
    """Count this attempt on every key (committed before the hash); a key that is locked
    meanwhile, or already at its limit (parallel guesses), refuses: seconds to wait."""
    with session_scope(settings.database_url) as db:
        counts: dict[str, int] = {}
        for key in keys:
            count, locked_until = count_attempt(db, key.key, settings.login_window_s)
            if locked_until or count > key.lock_after:
                return max(_seconds_until(locked_until), settings.login_backoff_s, 1.0)
            counts[key.key] = count
        # A name no account can have (too long, NUL, which PostgreSQL refuses) is
        # looked up nowhere but still costs its hash and counts as a failure.
        known = 0 < len(username) <= USERNAME_LENGTH and "\x00" not in username
        user = user_named(db, username) if known else None
        if user is None:
            return _Begun(counts, None, "")
        # A locked or pending account's password is checked as any (same cost); only its
        # owner, who knows it, learns why there is no login.
        return _Begun(counts, user.id, user.password_hash, blocked(user) or "")


def count_attempt(db: Session, key: str, window_s: float) -> tuple[int, datetime | None]:
    """Add one failure to `key` unless it is locked, in one statement (an upsert), so
    parallel attempts each get their own number. Returns (count, locked_until if locked)."""
    now = utcnow()
    locked = LoginThrottle.locked_until > now
    forgotten = or_(
        LoginThrottle.last_failure_at.is_(None),
        LoginThrottle.last_failure_at < now - timedelta(seconds=window_s),
    )
    insert = pg_insert if db.get_bind().dialect.name == "postgresql" else sqlite_insert
    statement = (
        insert(LoginThrottle)
        .values(key=key, failures=1, last_failure_at=now)
        .on_conflict_do_update(
            index_elements=["key"],
            set_={
                "failures": case(
                    (locked, LoginThrottle.failures),
                    (forgotten, 1),
                    else_=LoginThrottle.failures + 1,
                ),
                "last_failure_at": case((locked, LoginThrottle.last_failure_at), else_=now),
            },
        )
        .returning(LoginThrottle.failures, LoginThrottle.locked_until)
    )
    count, until = db.execute(statement).one()
    until = aware(until) if until else None
    return count, until if until and until > now else None


def _finish(
    settings: Settings,
    keys: list[Key],
    begun: _Begun,
    ok: bool,
    renewed: str | None,
    address: str,
) -> Result:
    with session_scope(settings.database_url) as db:
        if ok and begun.blocked:
            return Result(refusal=begun.blocked)
        if ok and begun.user_id is not None:
            return _succeed(db, settings, keys, begun.user_id, renewed)
        unknown = begun.user_id is None
        for key in keys:  # an invented name's lock is no one's: the tally counts it
            audited = not (unknown and key is keys[0])
            _fail(db, settings, key, begun.counts[key.key], address, audited)
        _tally(db, settings, address, unknown)
        return Result()


def _tally(db: Session, settings: Settings, address: str, unknown: bool) -> None:
    """Count this failure in the address's `login_failed` entry: a new entry when the
    address's earlier failures are forgotten (login_window_s). The counter's upsert
    comes first: its row lock (to the commit) serializes the entry's update."""
    count, _ = count_attempt(db, f"failed:{address}"[:KEY_LENGTH], settings.login_window_s)
    counts = {"count": 1, "unknown_names": int(unknown)}
    tally(db, "login_failed", f"address {address}"[:KEY_LENGTH], counts, new=count == 1)


def _succeed(
    db: Session, settings: Settings, keys: list[Key], user_id: int, renewed: str | None
) -> Result:
    account, address = keys
    now = utcnow()
    db.execute(delete(LoginThrottle).where(LoginThrottle.key == account.key))
    db.execute(  # this attempt was counted on the address before the hash: take it back
        update(LoginThrottle)
        .where(LoginThrottle.key == address.key, LoginThrottle.failures > 0)
        .values(failures=LoginThrottle.failures - 1)
    )
    db.execute(  # rows nobody needs any more (no lock, failures forgotten)
        delete(LoginThrottle).where(
            LoginThrottle.last_failure_at < now - timedelta(seconds=settings.login_window_s),
            or_(LoginThrottle.locked_until.is_(None), LoginThrottle.locked_until < now),
        )
    )
    user = db.get(User, user_id)
    assert user is not None
    if renewed:
        user.password_hash = renewed
    return Result(user_id=user_id, session_id=start_session(db, user, settings.session_ttl_s))


def _fail(
    db: Session, settings: Settings, key: Key, count: int, address: str, audited: bool
) -> None:
    """Failure number `count` of `key`: back off, or lock (and, `audited`, say so in the
    audit log)."""
    if count <= key.free:
        return
    now = utcnow()
    locks = count >= key.lock_after
    backoff = settings.login_backoff_s * 2.0 ** min(count - key.free - 1, 60)
    until = now + timedelta(seconds=min(backoff, settings.login_lock_s))
    if locks:
        until = now + timedelta(seconds=settings.login_lock_s)
    values: dict[str, Any] = {"locked_until": until}
    if locks:  # the next failure after this lock ends locks again at once
        values["failures"] = key.lock_after - 1
    changed = db.execute(
        update(LoginThrottle)
        .where(
            LoginThrottle.key == key.key,
            or_(LoginThrottle.locked_until.is_(None), LoginThrottle.locked_until < until),
        )
        .values(**values)
    ).rowcount  # type: ignore[attr-defined]
    if locks and changed and audited:
        record(
            db,
            None,
            "login_locked",
            key.target,
            {
                "failures": count,
                "until": until.isoformat(),
                "seconds": math.ceil(settings.login_lock_s),
                "address": address,
            },
        )
