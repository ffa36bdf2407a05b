"""API tokens checked recently, per API process: a read (GET, HEAD) with one of them
needs no query for who is asking. Measured at 500 clients, the token lookup and the
user's and team's rows were three of a leaderboard read's five queries.

Bounded staleness: what a process keeps is at most TTL_S old, or LIVE_TTL_S while the
process hears the Redis news (api.news.heard). A revocation, or a change to a user or
a team (admin flag, team, name), made in this process clears its cache at once; made in
another API process, it reaches this one with that process's news (api.reads.readcache
publishes it); made in the database by hand, within the TTL. Writes never use the
cache: a revoked token never writes, and a submission sees the team as it is. Expiry
is checked on every use (it is in the cached row), so an expired token is refused on
time.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import inspect
from sqlalchemy.orm import Session, make_transient_to_detached
from sqlalchemy.orm.attributes import set_committed_value

from api import news
from api.actions import contests
from api.db.models import ApiToken, Team, User, aware, utcnow

TTL_S = 5.0
LIVE_TTL_S = 60.0  # every change through the service is news then; this bounds the rest
MAX_ENTRIES = 20_000  # per process; the oldest go first


@dataclass
class Entry:
    token_id: int
    expires_at: datetime | None
    last_used_at: datetime | None
    user: dict[str, Any]  # the user's columns
    team: dict[str, Any] | None  # its team's columns
    fetched: float  # time.monotonic() of the database check
    contests: tuple[int, ...] = ()  # the contests its team is registered in (approved)


_entries: OrderedDict[tuple[str, str], Entry] = OrderedDict()
_lock = threading.Lock()
# Counts clears: a check read from the database before a clear is not kept after it
# (a revocation or a team move committed meanwhile would then live a whole TTL).
_clears = [0]


def generation() -> int:
    """Taken before a token's database check; remember() needs it."""
    return _clears[0]


def _key(db: Session, digest: str) -> tuple[str, str]:
    # By database too: one process may serve apps on several (tests, a second instance).
    return str(db.get_bind().url), digest


def _columns(obj: Any) -> dict[str, Any]:
    return {a.key: getattr(obj, a.key) for a in inspect(type(obj)).column_attrs}


def _attach(db: Session, model: type, columns: dict[str, Any]) -> Any:
    """A fresh persistent object in `db` made from cached columns, without a query."""
    obj = model(**columns)
    make_transient_to_detached(obj)
    db.add(obj)
    return obj


def remember(db: Session, digest: str, row: ApiToken, user: User, gen: int) -> None:
    """Keeps the check read from the database since generation() was `gen`."""
    team = user.team  # loaded now, while the session is open
    mine = tuple(contests.registered(db, user.team_id))
    entry = Entry(row.id, row.expires_at, row.last_used_at, _columns(user),
                  _columns(team) if team else None, time.monotonic(), mine)  # fmt: skip
    key = _key(db, digest)
    with _lock:
        if _clears[0] != gen:
            return  # cleared while it was read: it may predate the change
        _entries[key] = entry
        _entries.move_to_end(key)
        while len(_entries) > MAX_ENTRIES:
            _entries.popitem(last=False)


def lookup(db: Session, digest: str) -> Entry | None:
    """The entry while it is fresh and its token not expired; else None (check again)."""
    return lookup_at(_key(db, digest))


def lookup_at(key: tuple[str, str]) -> Entry | None:
    """lookup by (the database's URL as str() writes it, the token's digest)."""
    with _lock:
        entry = _entries.get(key)
        if entry is None:
            return None
        if time.monotonic() - entry.fetched > ttl():
            del _entries[key]
            return None
    if entry.expires_at is not None and aware(entry.expires_at) <= utcnow():
        return None
    return entry


def ttl() -> float:
    return max(TTL_S, LIVE_TTL_S) if news.heard[0] else TTL_S


def attach_user(db: Session, entry: Entry) -> User:
    """The entry's user (and team) as rows of `db`, as a query would have given them."""
    existing = db.identity_map.get((User, (entry.user["id"],), None))  # type: ignore[arg-type]
    if existing is not None:
        return existing  # type: ignore[return-value]
    user = _attach(db, User, entry.user)
    team = None
    if entry.team is not None:
        team = db.identity_map.get((Team, (entry.team["id"],), None))  # type: ignore[arg-type]
        team = team or _attach(db, Team, entry.team)
    set_committed_value(user, "team", team)
    return user


def touched(digest: str, url: str, when: datetime) -> None:
    with _lock:
        entry = _entries.get((url, digest))
        if entry is not None:
            entry.last_used_at = when


def clear() -> None:
    """After a revocation in this process: every token is checked again."""
    with _lock:
        _clears[0] += 1
        _entries.clear()
