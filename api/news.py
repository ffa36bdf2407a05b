"""News of a submission, from the workers to every API process (api.broadcast).

When Redis is the broker, a worker publishes "submission N changed" on a pub/sub
channel right after it commits a case result or a status change; each API process's
broadcaster then reads the submission once for all its viewers. Pub/sub delivers at
most once: a message lost (Redis down, an API restarting) costs a delay, as the
broadcaster also polls, never an event. The embedded broker has no pub/sub: nothing
is published and the broadcaster polls.
"""

from __future__ import annotations

import logging
from functools import cache
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from sqlalchemy import event
from sqlalchemy.orm import Session

from api.settings import get_settings

log = logging.getLogger("memorace.news")
QUEUE_FLAG = "q"  # a word of the message: a judging entered or left the queue
BOARD_FLAG = "b"  # a judging ended: the boards may have changed
TEAM_MARK = "t"  # "t<id>": the submission's team (what the API's read caches clear)
AUTH_FLAG = "a"  # a user, team or token changed: the API processes' token caches go
# Whether this process hears the news now (api.broadcast keeps it): while it does, the
# read caches keep answers longer, since every change of the service clears them.
heard = [False]


class News(NamedTuple):
    """Submission `sub_id` changed (0: something, said by another API process)."""

    sub_id: int
    queue: bool = False
    team: int | None = None  # None: the message does not say what it changed
    board: bool = False
    auth: bool = False  # who may do what changed (a revocation, a user or team edited)


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
    if not words or not _number(words[0]):
        return None
    teams = [int(w[1:]) for w in words[1:] if w[:1] == TEAM_MARK and _number(w[1:])]
    team, flags = (teams[0] if teams else None), words[1:]
    return News(int(words[0]), QUEUE_FLAG in flags, team, BOARD_FLAG in flags, AUTH_FLAG in flags)


def _number(word: str) -> bool:
    return word.isascii() and word.isdigit() and len(word) <= 18


def message(item: News) -> str:
    words = [str(item.sub_id)]
    words += [QUEUE_FLAG] * item.queue + [BOARD_FLAG] * item.board + [AUTH_FLAG] * item.auth
    words += [] if item.team is None else [f"{TEAM_MARK}{item.team}"]
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
    """Publish once `db` commits (never for a rolled-back change)."""
    if uses_redis(get_settings().broker_url):
        event.listen(db, "after_commit", lambda _s: publish(item), once=True)
