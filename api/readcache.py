"""A per-process micro-cache of what the hot reads compute: the freshness snapshot of a
problem (api.db.board.snapshot) and whole answers (a team's submission-list page). A
hit needs no database connection, no worker thread and no serialization.

Bounded staleness: an entry is used for at most STALENESS_S (MEMORACE_READ_STALENESS_S,
default 0.25 s; 0 turns the cache off). Sooner than that, every entry goes at once when
- this process commits a write (any ORM change or DML, except token and web-session
  bookkeeping, the login throttle and worker heartbeats, which no cached read shows):
  so whoever wrote sees the write on their next read;
- Redis brings news (api.news): a worker's progress or status change, or a write by
  another API process (install() makes each API process publish one after its writes).
So a submission's own status shows at once in every process while Redis delivers; on
the embedded broker (no pub/sub) another process sees it within STALENESS_S.

A value computed while a clear happened is not kept (the generation moved): it may
have been read before the write it would then outlive.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from sqlalchemy import event
from sqlalchemy.orm import ORMExecuteState, Session

from api import news
from api.db import board

T = TypeVar("T")
STALENESS_S = float(os.environ.get("MEMORACE_READ_STALENESS_S") or 0.25)
MAX_ENTRIES = 4096  # per process; past it, expired entries go, then everything
# Rows no cached read shows, written often (token use, heartbeats): their commits keep
# the cache.
UNSEEN_TABLES = frozenset({"api_tokens", "web_sessions", "login_throttle", "workers"})
WROTE = "memorace_readcache_wrote"  # in Session.info: this transaction changed something

_entries: dict[Hashable, tuple[float, int, Any]] = {}  # key: (monotonic time, gen, value)
_generation = [0]
_lock = threading.Lock()
_publish_to: list[str] = []  # the broker whose other API processes hear of our writes


def generation() -> int:
    return _generation[0]


def get(key: Hashable) -> Any | None:
    """The value while it is at most STALENESS_S old and no clear came since; else None."""
    found = _entries.get(key)
    if found is None:
        return None
    made, gen, value = found
    if gen != _generation[0] or time.monotonic() - made > STALENESS_S:
        return None
    return value


def put(key: Hashable, value: Any, gen: int) -> None:
    """Keeps `value`, computed from what the database said at generation `gen`."""
    if STALENESS_S <= 0:
        return
    now = time.monotonic()
    with _lock:
        if gen != _generation[0]:
            return  # a write came while it was computed: it may predate it
        if len(_entries) >= MAX_ENTRIES:
            _drop_expired(now)
        _entries[key] = (now, gen, value)


def cached(key: Hashable, make: Callable[[], T]) -> T:
    """get(key), else make() kept for the next readers."""
    found = get(key)
    if found is not None:
        return found  # type: ignore[no-any-return]
    gen = generation()
    value = make()
    put(key, value, gen)
    return value


def _drop_expired(now: float) -> None:
    for key in [k for k, (made, _, _) in _entries.items() if now - made > STALENESS_S]:
        del _entries[key]
    if len(_entries) >= MAX_ENTRIES:
        _entries.clear()


def clear() -> None:
    """Every entry goes (a write, or news from Redis)."""
    with _lock:
        _generation[0] += 1
        _entries.clear()


def install(broker_url: str) -> None:
    """Called by each API process: its writes are news for the others (Redis only)."""
    if news.uses_redis(broker_url):
        _publish_to[:] = [broker_url]


def database(db: Session) -> Hashable:
    """The database `db` reads, for cache keys: one process may serve apps on several
    (tests, an operator's second instance), whose row ids coincide."""
    return db.get_bind().url


def _seen(table: Any) -> bool:
    return getattr(table, "name", None) not in UNSEEN_TABLES


@event.listens_for(Session, "after_flush")
def _after_flush(session: Session, _context: Any) -> None:
    changed = (*session.new, *session.dirty, *session.deleted)
    if any(_seen(getattr(type(o), "__table__", None)) for o in changed):
        session.info[WROTE] = True


@event.listens_for(Session, "do_orm_execute")
def _on_execute(state: ORMExecuteState) -> None:
    if (state.is_update or state.is_delete or state.is_insert) and _seen(
        getattr(state.statement, "table", None)
    ):
        state.session.info[WROTE] = True


@event.listens_for(Session, "after_commit")
def _after_commit(session: Session) -> None:
    if session.info.pop(WROTE, False):
        clear()
        if _publish_to:  # news 0: no submission's, only "something changed"
            news.publish(0, broker_url=_publish_to[0])


@event.listens_for(Session, "after_rollback")
def _after_rollback(session: Session) -> None:
    session.info.pop(WROTE, None)


# --- what the hot reads keep ---------------------------------------------------------------


def _snapshot_key(db: Session, slug: str, weights: bool) -> Hashable:
    return ("snapshot", database(db), slug, weights)


def snapshot(db: Session, slug: str, weights: bool = False) -> board.Snapshot:
    """board.snapshot, asked of the database at most once per STALENESS_S."""
    return cached(_snapshot_key(db, slug, weights), lambda: board.snapshot(db, slug, weights))


def known_snapshot(db: Session, slug: str, weights: bool = False) -> board.Snapshot | None:
    """The snapshot if this process holds a fresh one (no I/O), else None."""
    return get(_snapshot_key(db, slug, weights))  # type: ignore[no-any-return]
