"""A per-process micro-cache of what the hot reads compute: the freshness snapshot of a
problem (api.db.board.snapshot) and whole answers (a team's submission-list page). A
hit needs no database connection, no worker thread and no serialization.

Bounded staleness: an entry is used for at most STALENESS_S (MEMORACE_READ_STALENESS_S,
default 0.25 s; 0 turns the cache off). Sooner than that, entries go at once when
- this process commits a write (any ORM change or DML, except token and web-session
  bookkeeping, the login throttle and worker heartbeats, which no cached read shows):
  every entry, so whoever wrote sees the write on their next read;
- Redis brings news (api.news): a write by another API process (install() makes each
  API process publish one after its writes) clears every entry; a worker's news says
  which team's submission changed, whether the queue moved and whether the board did,
  and clears only those: that team's list (and the organizers'), every list when the
  queue moved (positions), the boards when a judging ended. Measured at 500 clients
  with judgings running, clearing everything on every case result left half the reads
  to the database.
So a submission's own status shows at once in every process while Redis delivers; on
the embedded broker (no pub/sub) another process sees it within STALENESS_S.

A value computed while a clear of what it shows happened is not kept: it may have been
read before the write it would then outlive.
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

# What an entry shows, so that news clears only what it changes: a board's snapshot
# (BOARD) or one team's submission list ((LISTS, team id); (LISTS, ADMIN) for the
# organizers', who see every team's).
BOARD, LISTS, ADMIN = "board", "lists", "admin"
Scope = tuple[str, Hashable]

_entries: dict[Hashable, tuple[float, Scope, Any]] = {}  # key: (monotonic time, scope, value)
_clock = [0]  # counts clears; a value computed from the clock at `gen` is kept only if
_cleared: dict[Hashable, int] = {}  # nothing it shows was cleared after gen: by scope,
_lock = threading.Lock()  # by kind (BOARD, LISTS) and by None (everything)
_publish_to: list[str] = []  # the broker whose other API processes hear of our writes


def generation() -> int:
    return _clock[0]


def get(key: Hashable) -> Any | None:
    """The value while it is at most STALENESS_S old and not cleared; else None."""
    found = _entries.get(key)
    if found is None or time.monotonic() - found[0] > STALENESS_S:
        return None
    return found[2]


def put(key: Hashable, value: Any, gen: int, scope: Scope) -> None:
    """Keeps `value`, computed from what the database said at generation `gen`."""
    if STALENESS_S <= 0:
        return
    now = time.monotonic()
    with _lock:
        if max(_cleared.get(None, 0), _cleared.get(scope[0], 0), _cleared.get(scope, 0)) > gen:
            return  # cleared while it was computed: it may predate the change
        if len(_entries) >= MAX_ENTRIES:
            _drop_expired(now)
        _entries[key] = (now, scope, value)


def cached(key: Hashable, scope: Scope, make: Callable[[], T]) -> T:
    """get(key), else make() kept for the next readers."""
    found = get(key)
    if found is not None:
        return found  # type: ignore[no-any-return]
    gen = generation()
    value = make()
    put(key, value, gen, scope)
    return value


def _drop_expired(now: float) -> None:
    for key in [k for k, (made, _, _) in _entries.items() if now - made > STALENESS_S]:
        del _entries[key]
    if len(_entries) >= MAX_ENTRIES:
        _entries.clear()


def clear(*what: Hashable) -> None:
    """What changed goes: each of `what` a scope or a kind; nothing named: everything (a
    write here, or news that does not say what it changed)."""
    with _lock:
        _clock[0] += 1
        for name in what or (None,):
            _cleared[name] = _clock[0]
        if not what:
            _entries.clear()
            return
        gone = [k for k, (_, scope, _) in _entries.items() if scope in what or scope[0] in what]
        for key in gone:
            del _entries[key]


def hear(item: news.News) -> None:
    """Clears what a piece of news changed (api.broadcast calls it for each)."""
    if item.team is None:
        clear()  # another API process's write, or a worker that does not say
        return
    scopes: list[Hashable] = [(LISTS, item.team), (LISTS, ADMIN)]
    if item.queue:
        scopes.append(LISTS)  # every queued submission's position may move
    if item.board:
        scopes.append(BOARD)
    clear(*scopes)


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
            news.publish(news.News(0), broker_url=_publish_to[0])


@event.listens_for(Session, "after_rollback")
def _after_rollback(session: Session) -> None:
    session.info.pop(WROTE, None)


# --- what the hot reads keep ---------------------------------------------------------------


def _snapshot_key(db: Session, slug: str, weights: bool) -> Hashable:
    return ("snapshot", database(db), slug, weights)  # as known_snapshot_at reads it


def snapshot(db: Session, slug: str, weights: bool = False) -> board.Snapshot:
    """board.snapshot, asked of the database at most once per STALENESS_S."""
    key = _snapshot_key(db, slug, weights)
    return cached(key, (BOARD, slug), lambda: board.snapshot(db, slug, weights))


def known_snapshot(db: Session, slug: str, weights: bool = False) -> board.Snapshot | None:
    """The snapshot if this process holds a fresh one (no I/O), else None."""
    return known_snapshot_at(database(db), slug, weights)


def known_snapshot_at(db_key: Hashable, slug: str, weights: bool = False) -> board.Snapshot | None:
    """known_snapshot by the database's key (database()): no session needed."""
    return get(("snapshot", db_key, slug, weights))  # type: ignore[no-any-return]
