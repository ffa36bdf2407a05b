"""The database side of a restore (api.backup.restore): the target must be empty, its
schema is made up to the backup's revision, sequences follow the restored ids, and
blobs move between the two blob stores when the backup's and the host's differ."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, Integer, MetaData, Table, func, select, text

from api.settings import Settings

# Rows the migrations themselves seed into an empty database: not the data of anyone.
SEEDED = {"alembic_version": None, "board_state": 1, "contest": 1}


class RestoreError(Exception):
    """The archive is damaged or the target holds data: nothing was restored."""


def empty_database(engine: Engine) -> None:
    """Refuse a database that holds anything but what migrating an empty one makes (a
    host whose service started once is empty still)."""
    meta = MetaData()
    with engine.connect() as conn:
        meta.reflect(bind=conn)
        for table in meta.sorted_tables:
            limit = SEEDED.get(table.name, 0)
            count = conn.scalar(select(func.count()).select_from(table))
            if limit is not None and count and count > limit:
                raise RestoreError(
                    f"the database already holds data (table {table.name}: {count} rows): "
                    "restore into an empty database"
                )


def drop_tables(engine: Engine) -> None:
    """An empty database's tables, gone: the schema is made again at the backup's
    revision (which may be older than what the service made)."""
    meta = MetaData()
    with engine.begin() as conn:
        meta.reflect(bind=conn)
        meta.drop_all(conn)


def migrate_to(url: str, revision: str) -> None:
    """The schema of `revision`; RestoreError when this release does not know it (a
    backup made by a newer release)."""
    from alembic import command
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from alembic.util import CommandError

    from api.db.session import MIGRATIONS

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    try:
        ScriptDirectory.from_config(config).get_revision(revision)
    except CommandError:
        raise RestoreError(
            f"the backup's schema revision {revision!r} is newer than this release knows: "
            "restore it with the release that made it (or a newer one)"
        ) from None
    from sqlalchemy import create_engine

    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, revision)
    finally:
        engine.dispose()


def set_sequences(conn: Any, tables: Iterable[Table]) -> None:
    """On PostgreSQL, each id sequence past the largest restored id (rows went in with
    their ids, which moves no sequence); SQLite's AUTOINCREMENT follows by itself."""
    if conn.dialect.name != "postgresql":
        return
    for table in tables:
        keys = list(table.primary_key.columns)
        if len(keys) != 1 or not isinstance(keys[0].type, Integer):
            continue
        column = keys[0].name
        conn.execute(
            text(
                "SELECT setval(seq, top) FROM (SELECT pg_get_serial_sequence(:t, :c) AS seq, "
                f'(SELECT max("{column}") FROM "{table.name}") AS top) AS x '
                "WHERE seq IS NOT NULL AND top IS NOT NULL"
            ),
            {"t": f'"{table.name}"', "c": column},
        )


def copy_blobs_across(settings: Settings, manifest: dict[str, Any]) -> None:
    """A backup of one blob store restored onto a host with the other (the embedded
    service moved onto PostgreSQL, say): its blobs are copied into the host's store."""
    from api.blobs import blob_store

    store = blob_store(settings)
    if settings.blob_store == "database":
        for rel in manifest["files"]:
            if rel.split("/", 1)[0] in ("blobs", "plans"):
                store.put_file(settings.data_dir / rel)
    elif manifest["tables"].get("blobs"):
        _blob_rows_to_files(settings, store)


def _blob_rows_to_files(settings: Settings, store: Any) -> None:
    from sqlalchemy import create_engine

    engine = create_engine(settings.database_url)
    try:
        with engine.connect() as conn:
            shas = conn.scalars(text("SELECT sha256 FROM blobs ORDER BY sha256")).all()
            for sha in shas:
                chunks = conn.execution_options(yield_per=4).execute(
                    text("SELECT data FROM blob_chunks WHERE sha256 = :s ORDER BY seq"),
                    {"s": sha},
                )
                got = store._put(bytes(chunk) for (chunk,) in chunks)
                if got != sha:
                    Path(settings.blobs / got[:2] / got).unlink(missing_ok=True)
                    raise RestoreError(f"blob {sha} is damaged in the backup")
    finally:
        engine.dispose()
