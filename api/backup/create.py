"""A backup: the database from one snapshot, then the data directory's files worth
keeping, then the manifest (the package's docstring says why in that order)."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import tarfile
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from sqlalchemy import Connection, MetaData, Table, create_engine, select, text

from api.backup.format import FORMAT, KEPT, TABLES, encode_row, kept_files
from api.settings import Settings

# Rows fetched at a time: a blob chunk is 1 MiB, a row of any other table is small.
YIELD_ROWS = {"blob_chunks": 8}


class BackupError(Exception):
    """Nothing to back up where the settings point."""


def create(settings: Settings, out: Path) -> dict[str, Any]:
    """Write the backup of the service `settings` names to `out`; its manifest."""
    # Not resolved: a symbolic link at `out` (one planted in a shared folder, say) must
    # not send the archive, which holds every secret, over the file it points to.
    out = out.absolute()
    if out.is_symlink() or out.is_dir():
        raise BackupError(f"{out} is a symbolic link or a folder: name a file to write")
    if not out.parent.is_dir():
        raise BackupError(f"no folder {out.parent} to write the backup into")
    folder = out.parent.resolve()
    if any(folder.is_relative_to((settings.data_dir / name).resolve()) for name in KEPT):
        # It would keep its own staging (a copy of the database) and every earlier
        # backup there, each one holding the one before.
        raise BackupError(f"{out} is in a folder the backup keeps: write it elsewhere")
    with tempfile.TemporaryDirectory(prefix=".memorace-backup-", dir=out.parent) as tmp:
        staging = Path(tmp)
        with snapshot(settings.database_url, staging) as conn:
            revision, counts = dump_tables(conn, staging / TABLES)
        manifest: dict[str, Any] = {
            "format": FORMAT,
            "revision": revision,
            "backend": conn.dialect.name,
            "blob_store": settings.blob_store,
            "created_at": datetime.now(UTC).isoformat(),
            "tables": counts,
            "table_files": {},
            "files": {},
        }
        # Written inside the owner-only staging folder, owner-only from its first byte
        # (no world-readable moment, no `.partial` name beside `out` to plant a link at),
        # then renamed onto `out`: a rename replaces a link, never follows it.
        partial = staging / "archive.partial"
        mode = "w:gz" if out.name.endswith((".gz", ".tgz")) else "w"
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with (
            os.fdopen(fd, "wb") as raw,
            tarfile.open(fileobj=raw, mode=mode, format=tarfile.PAX_FORMAT) as tar,
        ):
            for name in counts:
                staged = staging / TABLES / f"{name}.jsonl"
                entry = _add_file(tar, f"{TABLES}/{name}.jsonl", staged, prefix="")
                manifest["table_files"][name] = entry
            for rel, path in kept_files(settings.data_dir):
                entry = _add_file(tar, rel, path)
                if entry is not None:
                    manifest["files"][rel] = entry
            _add_bytes(tar, "manifest.json", json.dumps(manifest, indent=1).encode())
        os.replace(partial, out)
    return manifest


@contextmanager
def snapshot(url: str, staging: Path) -> Iterator[Connection]:
    """A connection that reads one consistent state of the database."""
    if url.startswith("sqlite"):
        # SQLite's online backup copies the file as of one moment (writers go on in WAL);
        # the copy is then read at leisure, holding no read lock on the live file.
        copy, path = staging / "snapshot.sqlite", url.split("///", 1)[1]
        if not Path(path).is_file():  # sqlite3 would make an empty one
            raise BackupError(f"no database at {path}: check MEMORACE_DATA_DIR")
        source = sqlite3.connect(path, timeout=30)
        target = sqlite3.connect(copy)
        try:
            source.backup(target)
        finally:
            target.close()
            source.close()
        engine = create_engine(f"sqlite:///{copy}")
        try:
            with engine.connect() as conn:
                yield conn
        finally:
            engine.dispose()
        return
    engine = create_engine(url)
    try:
        options = {"isolation_level": "REPEATABLE READ", "postgresql_readonly": True}
        with engine.connect().execution_options(**options) as conn, conn.begin():
            # Every timestamp read as UTC: the restore may write them into SQLite, which
            # keeps no zone.
            conn.execute(text("SET LOCAL TIME ZONE 'UTC'"))
            yield conn
    finally:
        engine.dispose()


def dump_tables(conn: Connection, folder: Path) -> tuple[str, dict[str, int]]:
    """Each table's rows into folder/NAME.jsonl, in foreign-key order; (the schema
    revision, rows per table)."""
    folder.mkdir()
    meta = MetaData()
    meta.reflect(bind=conn)
    if "alembic_version" not in meta.tables:
        raise BackupError("the database has no MemoRace schema: nothing to back up")
    revision = conn.scalar(text("SELECT version_num FROM alembic_version"))
    counts = {}
    for table in meta.sorted_tables:
        if table.name != "alembic_version":
            counts[table.name] = _dump_table(conn, table, folder / f"{table.name}.jsonl")
    return str(revision), counts


def _dump_table(conn: Connection, table: Table, path: Path) -> int:
    columns = [c.name for c in table.columns]
    query = select(table).order_by(*(table.primary_key.columns or table.columns))
    rows = conn.execution_options(yield_per=YIELD_ROWS.get(table.name, 500)).execute(query)
    count = 0
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps(columns) + "\n")
        for row in rows:
            out.write(json.dumps(encode_row(row)) + "\n")
            count += 1
    return count


def _add_file(
    tar: tarfile.TarFile, rel: str, path: Path, prefix: str = "files/"
) -> dict[str, Any] | None:
    """Add one kept file, hashed as it is read; None when it went away meanwhile (an
    import's upload, once its job ended)."""
    try:
        fh = path.open("rb")
    except (FileNotFoundError, IsADirectoryError):
        return None
    with fh:
        size = os.fstat(fh.fileno()).st_size
        info = tarfile.TarInfo(prefix + rel)
        info.size, info.mode, info.mtime = size, 0o600, int(time.time())
        hashing = _Hashing(fh)
        tar.addfile(info, hashing)
    return {"size": size, "sha256": hashing.sha.hexdigest()}


class _Hashing:
    """A file object that hashes what tarfile reads from it."""

    def __init__(self, fh: IO[bytes]):
        self.fh, self.sha = fh, hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self.fh.read(size)
        self.sha.update(data)
        return data


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    import io

    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o600, int(time.time())
    tar.addfile(info, io.BytesIO(data))
