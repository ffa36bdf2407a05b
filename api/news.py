"""News of a submission, from the workers to every API process (api.live.broadcast).

When Redis is the broker, a worker publishes "submission N changed" on a pub/sub
channel right after it commits a case result or a status change; each API process's
broadcaster then reads the submission once for all its viewers. Pub/sub delivers at
most once: a message lost (Redis down, an API restarting) costs a delay, as the
broadcaster also polls, never an event. The embedded backend (SQLite, no Redis) has
no pub/sub: there a writer adds the news as a row of the `news` table in the same
transaction as its change, and each API process reads the rows after the last it saw
a few times a second (tail()): SQLite commits one writer at a time, so row ids rise
in commit order and a reader never skips one that commits late.
"""

from __future__ import annotations

import logging
import secrets
from datetime import timedelta
from functools import cache
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from sqlalchemy import delete, event, func, select
from sqlalchemy.orm import Session

from api.db.models import NewsRow, utcnow
from api.db.session import get_engine, session_scope
from api.numbers import plain_id
from api.settings import get_settings

log = logging.getLogger("memorace.news")
QUEUE_FLAG = "q"  # a word of the message: a judging entered or left the queue
BOARD_FLAG = "b"  # a judging ended: the boards may have changed
TEAM_MARK = "t"  # "t<id>": the submission's team (what the API's read caches clear)
AUTH_FLAG = "a"  # a user, team or token changed: the API processes' token caches go
MESSAGES_FLAG = "m"  # a question, answer or announcement (api.live.message_feed); clears nothing
ORIGIN_MARK = "o"  # "o<hex>": the API process that wrote it (it cleared its own at commit)
ORIGIN = secrets.token_hex(6)  # this process's
# Whether this process hears the news now (api.live.broadcast keeps it): while it does, the
# read caches keep answers longer, since every change of the service clears them.
heard = [False]


class News(NamedTuple):
    """Submission `sub_id` changed (0: something, said by another API process)."""

    sub_id: int
    queue: bool = False
    team: int | None = None  # None: the message does not say what it changed
    board: bool = False
    auth: bool = False  # who may do what changed (a revocation, a user or team edited)
    origin: str = ""  # the API process that wrote it ("": a worker)
    messages: bool = False  # the clarifications changed (api.live.message_feed)


def uses_redis(broker_url: str) -> bool:
    return broker_url.startswith(("redis://", "rediss://", "unix://"))


def channel(broker_url: str) -> str:
    """One channel per Redis database: pub/sub ignores database numbers, and two services
    sharing a Redis server use different ones."""
    return f"memorace:news:{urlsplit(broker_url).path.strip('/') or '0'}"


def parse(message: Any) -> News | None:
    """The news, or None for anything else; words it does not know are ignored."""
    text = message.decode(errors="replace") if isinstance(message, bytes) else str(message)
    words = text.split()
    sub_id = plain_id(words[0]) if words else None
    if sub_id is None:
        return None
    teams = [t for w in words[1:] if w[:1] == TEAM_MARK and (t := plain_id(w[1:])) is not None]
    origins = [w[1:] for w in words[1:] if w[:1] == ORIGIN_MARK and _hex(w[1:])]
    team, flags = (teams[0] if teams else None), words[1:]
    return News(sub_id, QUEUE_FLAG in flags, team, BOARD_FLAG in flags, AUTH_FLAG in flags,
                origins[0] if origins else "", MESSAGES_FLAG in flags)  # fmt: skip


def _hex(word: str) -> bool:
    return 0 < len(word) <= 32 and all(c in "0123456789abcdef" for c in word)


def message(item: News) -> str:
    words = [str(item.sub_id)]
    words += [QUEUE_FLAG] * item.queue + [BOARD_FLAG] * item.board + [AUTH_FLAG] * item.auth
    words += [MESSAGES_FLAG] * item.messages
    words += [] if item.team is None else [f"{TEAM_MARK}{item.team}"]
    words += [f"{ORIGIN_MARK}{item.origin}"] if _hex(item.origin) else []
    return " ".join(words)


@cache
def _client(broker_url: str) -> Any:
    import redis

    # Short timeouts: a judging never waits long on a Redis that is down.
    return redis.Redis.from_url(broker_url, socket_timeout=0.5, socket_connect_timeout=0.5)


def publish(item: News, broker_url: str | None = None) -> None:
    """Best effort: the database is the truth, and the API also polls it."""
    url = broker_url or get_settings().broker_url
    if not uses_redis(url):
        return
    try:
        _client(url).publish(channel(url), message(item))
    except Exception as exc:
        log.debug("cannot publish news of submission %s: %s", item.sub_id, exc)


def after_commit(db: Session, item: News) -> None:
    """Publish once `db` commits (never for a rolled-back change): on Redis after the
    commit, in the news table within the same transaction."""
    if uses_redis(get_settings().broker_url):
        event.listen(db, "after_commit", lambda _s: publish(item), once=True)
    elif in_table(db):
        db.add(NewsRow(text=message(item)))


def through_table(broker_url: str, database_url: str) -> bool:
    """Whether news goes through the table: no Redis, and a database that commits one
    writer at a time (SQLite), so that ids rise in commit order. PostgreSQL without
    Redis (not a deployment we support) goes without news: kept answers live
    api.reads.readcache.STALENESS_S there."""
    return not uses_redis(broker_url) and database_url.startswith("sqlite")


def in_table(db: Session) -> bool:
    """through_table for the database `db` writes to."""
    return through_table(get_settings().broker_url, str(db.get_bind().url))


KEEP_ROWS = timedelta(minutes=10)  # a reader further behind than this has restarted


def last_row(url: str) -> int:
    """The id of the newest news row (0: none): where a new reader starts."""
    with session_scope(url) as db:
        return db.scalar(select(func.max(NewsRow.id))) or 0


def tail(url: str, after: int, limit: int = 1000) -> tuple[int, list[News]]:
    """The news committed after row `after`, and the id to read after next time."""
    with session_scope(url) as db:
        newer = select(NewsRow.id, NewsRow.text).where(NewsRow.id > after)
        rows = db.execute(newer.order_by(NewsRow.id).limit(limit)).all()
    found = [item for _, text in rows if (item := parse(text)) is not None]
    return (rows[-1][0] if rows else after), found


def prune(url: str) -> None:
    """Rows older than KEEP_ROWS go (a Core statement: no read cache hears of it)."""
    with get_engine(url).begin() as conn:
        conn.execute(delete(NewsRow).where(NewsRow.at < utcnow() - KEEP_ROWS))
