"""Engines and sessions; SQLite gets WAL and a busy timeout, migrations run through Alembic."""

from __future__ import annotations

import os
import threading
from collections.abc import Collection, Iterator
from contextlib import contextmanager, suppress
from functools import cache, partial
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.orm import Session, sessionmaker

from api.db import board  # noqa: F401 - registers the leaderboards' change counter

MIGRATIONS = Path(__file__).parent / "migrations"


_ENGINES: dict[str, Engine] = {}
_ENGINES_LOCK = threading.Lock()


def get_engine(url: str) -> Engine:
    """One engine per database URL for the process's life."""
    with _ENGINES_LOCK:
        engine = _ENGINES.get(url)
        if engine is None:
            engine = _ENGINES[url] = _new_engine(url)
        return engine


def dispose_engines(keep: Collection[str] = ()) -> None:
    """Close the pooled connections of every engine but those of `keep` and forget them
    (a process that moves between databases, as the tests do, else keeps each one's
    connections, and their files, open)."""
    with _ENGINES_LOCK:
        gone = [url for url in _ENGINES if url not in keep]
        engines = [_ENGINES.pop(url) for url in gone]
    if engines:
        session_factory.cache_clear()  # its sessionmakers hold the engines
    for engine in engines:
        engine.dispose()


def engine_urls() -> set[str]:
    with _ENGINES_LOCK:
        return set(_ENGINES)


def _new_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        pool = pool_sizes() if path and path != ":memory:" else {}  # a file: a QueuePool
        engine = create_engine(
            url, connect_args={"check_same_thread": False, "timeout": 30}, **pool
        )
        event.listen(engine, "connect", partial(_sqlite_pragmas, path))
        return engine
    return create_engine(url, pool_pre_ping=True, **pool_sizes())


# anyio's default thread limiter: at most this many sync routes run at once per process.
API_THREADS = 40


def pool_sizes() -> dict[str, int]:
    """Enough connections for every request thread of a process to hold two: its
    session's, and the short one the token check opens to stamp a token's last use
    (with fewer, 40 threads each holding one and waiting for a second stall until
    the pool's timeout). MEMORACE_DB_POOL_SIZE connections stay open (default: anyio's
    40 threads), MEMORACE_DB_MAX_OVERFLOW more open while needed (default: 40). With N
    API processes PostgreSQL needs max_connections above N x (size + overflow)."""
    size = int(os.environ.get("MEMORACE_DB_POOL_SIZE") or API_THREADS)
    overflow = int(os.environ.get("MEMORACE_DB_MAX_OVERFLOW") or API_THREADS)
    return {"pool_size": max(size, 1), "max_overflow": max(overflow, 0)}


def requests_in_flight() -> int:
    """How many requests one API process lets in at once (api.access.inflight): each may hold
    two connections, so the pool can never run dry under them."""
    sizes = pool_sizes()
    return max((sizes["pool_size"] + sizes["max_overflow"]) // 2, 1)


def _sqlite_pragmas(path: str, dbapi_conn, _record) -> None:  # type: ignore[no-untyped-def]
    # Owner-only before WAL starts: SQLite gives its -wal and -shm files the database's mode.
    for name in (path, f"{path}-wal", f"{path}-shm"):
        if name and name != ":memory:" and os.path.exists(name):
            with suppress(OSError):  # not ours to change: leave it as it is
                os.chmod(name, 0o600)
    # WAL lets the API read while a worker writes; foreign keys are off by default.
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


@cache
def session_factory(url: str) -> sessionmaker[Session]:
    return sessionmaker(get_engine(url), expire_on_commit=False)


@contextmanager
def session_scope(url: str) -> Iterator[Session]:
    """A session that commits on success and rolls back on any error."""
    session = session_factory(url)()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def migrate(url: str) -> None:
    """Bring the schema to the newest Alembic revision.

    On PostgreSQL an advisory lock serialises this: the API and N workers starting
    together would otherwise race to create the same tables."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            if connection.dialect.name == "postgresql":
                connection.execute(text("SELECT pg_advisory_xact_lock(7270001)"))
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    finally:
        engine.dispose()
