"""A per-process micro-cache of what the hot reads compute: the freshness snapshot of a
problem (api.db.board.snapshot) and whole answers (a team's submission-list page). A
hit needs no database connection, no worker thread and no serialization.

Bounded staleness: an entry is used for at most STALENESS_S (MEMORACE_READ_STALENESS_S,
default 0.25 s; 0 turns the cache off), or LIVE_S (MEMORACE_READ_LIVE_S, default 5 s)
while this process hears the Redis news (api.live.broadcast says when it subscribed and
when it lost the subscription, and each clears everything): then every write of the
service is cleared by news, and LIVE_S bounds only what reaches the database around
the service (an operator's SQL) or a message pub/sub lost on a connection that stayed
up. Measured at 500 clients and 20 teams: a team's page lived 0.25 s and was read
about 1.5 times in that window. Sooner than that, entries go at once when
- this process commits a write (any ORM change or DML, except token and web-session
  bookkeeping, the login throttle, worker heartbeats and blobs, which no cached read
  shows): what it changed (api.reads.invalidation: one team's submissions and judgings clear
  what a worker's news of that team clears; anything else, every entry), so whoever
  wrote sees the write on their next read;
- Redis brings news (api.news): a write by another API process (install() makes each
  API process publish one after its writes) clears what it changed; a worker's news says
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
from api.access import tokencache
from api.db import board
from api.reads import single_flight
from api.reads.invalidation import Written, table_of

T = TypeVar("T")
STALENESS_S = float(os.environ.get("MEMORACE_READ_STALENESS_S") or 0.25)
LIVE_S = float(os.environ.get("MEMORACE_READ_LIVE_S") or 5.0)
MAX_ENTRIES = 4096  # per process; past it, expired entries go, then everything
WROTE = "memorace_readcache_wrote"  # in Session.info: what this transaction changed (Written)
AUTH = "memorace_readcache_auth"  # ... and it changed a user, a team or a token
NEW_TEAMS = "memorace_readcache_new_teams"  # teams made in this transaction: in no cache
# What api.access.tokencache keeps (a team's registrations: the contests its callers see).
AUTH_TABLES = frozenset({"users", "teams", "api_tokens", "registrations"})
BOOKKEEPING = "memorace_bookkeeping"  # an execution option: a write no cached read shows

# What an entry shows, so that news clears only what it changes: a board's snapshot
# (BOARD) or one team's submission list ((LISTS, team id); (LISTS, ADMIN) for the
# organizers', who see every team's); a list that shows a queued submission is
# (QUEUED, team id): only such a list shows queue positions, which move with the queue.
BOARD, LISTS, QUEUED, ADMIN = "board", "lists", "queued", "admin"
Scope = tuple[str, Hashable]

_entries: dict[Hashable, tuple[float, Scope, Any]] = {}  # key: (monotonic time, scope, value)
_clock = [0]  # counts clears; a value computed from the clock at `gen` is kept only if
_cleared: dict[Hashable, int] = {}  # nothing it shows was cleared after gen: by scope,
_lock = threading.Lock()  # by kind (BOARD, LISTS) and by None (everything)
_publish_to: list[str] = []  # the broker whose other API processes hear of our writes
_in_table = [False]  # no Redis: our writes are news rows (api.news), in their transaction


def generation() -> int:
    return _clock[0]


def lifetime() -> float:
    """How long an entry is used: LIVE_S while the news is heard, else STALENESS_S."""
    if STALENESS_S <= 0:
        return 0.0  # the cache is off
    return max(LIVE_S, STALENESS_S) if news.heard[0] else STALENESS_S


def hears_news(live: bool) -> None:
    """api.live.broadcast: Redis news is heard from now on (True), or no longer (False).
    Either way everything goes (news may have been lost around the change), the
    checked tokens too, which live longer while the news is heard (api.access.tokencache)."""
    news.heard[0] = live
    clear()
    tokencache.clear()


def get(key: Hashable) -> Any | None:
    """The value while it is at most lifetime() old and not cleared; else None."""
    found = _entries.get(key)
    if found is None or time.monotonic() - found[0] > lifetime():
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
    return cached_scoped(key, lambda: (make(), scope))


def cached_scoped(key: Hashable, make: Callable[[], tuple[T, Scope]]) -> T:
    """cached() where make() says what its value shows: (value, scope). Concurrent
    misses wait for the first one's value (api.reads.single_flight) and use it if it was kept (a
    clear in between would make it older than a write one of them may have made)."""
    found = get(key)
    if found is not None:
        return found  # type: ignore[no-any-return]
    flight, leader = single_flight.join(("readcache", key))
    if not leader:
        flight.done.wait(single_flight.WAIT_S)
        found = get(key)
        if found is not None:
            return found  # type: ignore[no-any-return]
    try:
        gen = generation()
        value, scope = make()
        put(key, value, gen, scope)
        return value
    finally:
        if leader:
            single_flight.land(("readcache", key), flight)


def _drop_expired(now: float) -> None:
    for key in [k for k, (made, _, _) in _entries.items() if now - made > lifetime()]:
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
    """Clears what a piece of news changed (api.live.broadcast calls it for each); our own
    writes' news is no news here: their commit cleared it."""
    if item.origin == news.ORIGIN or item.messages:
        return  # a message's news changes no kept answer (messages are read uncached)
    if item.auth:
        tokencache.clear()
    clear(*_scopes(item))


def _scopes(item: news.News) -> list[Hashable]:
    """What the news changed; [] (everything) when it does not say (another API
    process's write of more than one team's submissions, or a worker that does not)."""
    if item.team is None:
        return []
    scopes: list[Hashable] = [(kind, who) for kind in (LISTS, QUEUED) for who in (item.team, ADMIN)]
    if item.queue:
        scopes.append(QUEUED)  # every queued submission's position may move
    if item.board:
        scopes.append(BOARD)
    return scopes


def install(broker_url: str) -> None:
    """Called by each API process: its writes are news for the others (by Redis, or
    by the news table on the embedded backend)."""
    if news.uses_redis(broker_url):
        _publish_to[:] = [broker_url]
    else:
        _in_table[0] = True


def database(db: Session) -> Hashable:
    """The database `db` reads, for cache keys: one process may serve apps on several
    (tests, an operator's second instance), whose row ids coincide."""
    return db.get_bind().url


def _name(table: Any) -> str | None:
    return getattr(table, "name", None)


def _written(session: Session) -> Written:
    found = session.info.get(WROTE)
    if found is None:
        found = session.info[WROTE] = Written()
    return found  # type: ignore[no-any-return]


@event.listens_for(Session, "after_flush")
def _after_flush(session: Session, _context: Any) -> None:
    changed = (*session.new, *session.dirty, *session.deleted)
    if changed:
        wrote = _written(session)
        for obj in changed:
            wrote.note_row(obj, session)
    # A new user or token is in no cache; an edited or deleted one may be; a new
    # registration changes what its team's cached callers may see (unless the team is
    # new too).
    made = session.info.setdefault(NEW_TEAMS, set())
    made.update(o.id for o in session.new if table_of(o) == "teams")
    joined = any(table_of(o) == "registrations" and o.team_id not in made for o in session.new)
    if joined or any(table_of(o) in AUTH_TABLES for o in (*session.dirty, *session.deleted)):
        session.info[AUTH] = True


@event.listens_for(Session, "do_orm_execute")
def _on_execute(state: ORMExecuteState) -> None:
    if not (state.is_update or state.is_delete or state.is_insert):
        return
    table = _name(getattr(state.statement, "table", None))
    bookkeeping = state.execution_options.get(BOOKKEEPING)
    if not bookkeeping:
        _written(state.session).note_statement(table)
    joins = table == "registrations"  # an insert too: see _after_flush
    if table in AUTH_TABLES and (joins or not state.is_insert) and not bookkeeping:
        state.session.info[AUTH] = True


def _news_of(session: Session, pop: bool) -> tuple[bool, news.News | None]:
    """(whether this transaction wrote what a kept answer shows, its news; None: none)."""
    take = session.info.pop if pop else session.info.get
    wrote, auth = take(WROTE, None), take(AUTH, False)
    take(NEW_TEAMS, None)
    if wrote is not None and wrote.anything():
        return True, wrote.news(auth)
    return False, (news.News(0, auth=True, origin=news.ORIGIN) if auth else None)


@event.listens_for(Session, "before_commit")
def _before_commit(session: Session) -> None:
    """On the embedded backend our write's news is a row of its own transaction."""
    if not _in_table[0] or not news.in_table(session):
        return
    session.flush()  # what is pending says whether this transaction wrote
    _, item = _news_of(session, pop=False)
    if item is not None:
        news.after_commit(session, item)


@event.listens_for(Session, "after_commit")
def _after_commit(session: Session) -> None:
    wrote, item = _news_of(session, pop=True)
    if item is None:
        return
    if item.auth:
        tokencache.clear()
    if wrote:
        clear(*_scopes(item))
    if _publish_to:  # the other processes clear the same (api.reads.readcache.hear)
        news.publish(item, broker_url=_publish_to[0])


@event.listens_for(Session, "after_rollback")
def _after_rollback(session: Session) -> None:
    session.info.pop(WROTE, None)
    session.info.pop(AUTH, None)
    session.info.pop(NEW_TEAMS, None)


# --- what the hot reads keep ---------------------------------------------------------------


def _snapshot_key(db: Session, slug: str, weights: bool, contest: int | None) -> Hashable:
    return ("snapshot", database(db), slug, weights, contest)  # as known_snapshot_at reads it


def snapshot(
    db: Session, slug: str, weights: bool = False, contest: int | None = None
) -> board.Snapshot:
    """board.snapshot, asked of the database at most once per lifetime(). `contest`:
    None, the current contest (the only one the hot path serves)."""
    key = _snapshot_key(db, slug, weights, contest)
    return cached(key, (BOARD, slug), lambda: board.snapshot(db, slug, weights, contest))


def known_snapshot(db: Session, slug: str, weights: bool = False) -> board.Snapshot | None:
    """The current contest's snapshot if this process holds a fresh one (no I/O)."""
    return known_snapshot_at(database(db), slug, weights)


def known_snapshot_at(db_key: Hashable, slug: str, weights: bool = False) -> board.Snapshot | None:
    """known_snapshot by the database's key (database()): no session needed."""
    return get(("snapshot", db_key, slug, weights, None))  # type: ignore[no-any-return]
