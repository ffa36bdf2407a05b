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
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import event
from sqlalchemy.orm import Session

from api.settings import get_settings

log = logging.getLogger("memorace.news")
QUEUE_FLAG = "q"  # the message's second word: a judging entered or left the queue


def uses_redis(broker_url: str) -> bool:
    return broker_url.startswith(("redis://", "rediss://", "unix://"))


def channel(broker_url: str) -> str:
    """One channel per Redis database: pub/sub ignores database numbers, and two services
    sharing a Redis server use different ones."""
    return f"memorace:news:{urlsplit(broker_url).path.strip('/') or '0'}"


def parse(message: Any) -> tuple[int, bool] | None:
    """(submission id, whether the queue changed), or None for anything else."""
    text = message.decode(errors="replace") if isinstance(message, bytes) else str(message)
    words = text.split()
    if not words or not (words[0].isascii() and words[0].isdigit()) or len(words[0]) > 18:
        return None
    return int(words[0]), QUEUE_FLAG in words[1:]


@cache
def _client(broker_url: str) -> Any:
    import redis

    # Short timeouts: a judging never waits long on a Redis that is down.
    return redis.Redis.from_url(broker_url, socket_timeout=0.5, socket_connect_timeout=0.5)


def publish(sub_id: int, queue: bool = False, broker_url: str | None = None) -> None:
    """Best effort: the database is the truth, and the API also polls it."""
    url = broker_url or get_settings().broker_url
    if not uses_redis(url):
        return
    try:
        _client(url).publish(channel(url), f"{sub_id} {QUEUE_FLAG}" if queue else str(sub_id))
    except Exception as exc:
        log.debug("cannot publish news of submission %s: %s", sub_id, exc)


def after_commit(db: Session, sub_id: int, queue: bool = False) -> None:
    """Publish once `db` commits (never for a rolled-back change)."""
    if uses_redis(get_settings().broker_url):
        event.listen(db, "after_commit", lambda _s: publish(sub_id, queue), once=True)
