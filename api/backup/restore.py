"""Restore a backup (api.backup) onto an empty host: the database the settings name
(SQLite or PostgreSQL, whichever the backup came from) and the data directory.

Nothing is written before the whole archive is checked: each member a plain file with
a name the backup writes, no member the manifest does not list, each file's size and
sha256 and each table's row count as the manifest says. Then the schema is made up to
the backup's revision, the rows go in in one transaction, the schema moves on to this
release's newest revision (an upgrade, as on any host), and the files are written
inside the data directory only, never over an existing one.
"""

from __future__ import annotations

import hashlib
import json
import os
import tarfile
import zlib
from collections.abc import Iterator
from datetime import UTC
from pathlib import Path
from typing import IO, Any

from sqlalchemy import Connection, MetaData, Table, create_engine, func, select, text
from sqlalchemy.exc import StatementError

from api.backup.format import (
    FORMAT,
    KEPT,
    MANIFEST,
    TABLE_NAME,
    TABLES,
    check_path,
    decode_value,
)
from api.backup.restore_db import (
    RestoreError,
    copy_blobs_across,
    drop_tables,
    empty_database,
    migrate_to,
    set_sequences,
)
from api.settings import Settings

__all__ = ["RestoreError", "read_checked", "restore"]
MANIFEST_LIMIT = 256 * 2**20
# A header that tarfile reads whole into memory before any check of ours (a pax or
# GNU long-name record: a few KiB of gzip can declare GiB of it), or a sparse map it
# reads block after block. A backup writes pax records of a few hundred bytes (a long
# name, a size past 8 GiB) and never a sparse member.
HEADER_LIMIT = 2**20
_READ_WHOLE = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE,
               tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK)  # fmt: skip
# A table file's line (one row) read at most this long: a bounded read, not one line
# of GiB of a few KiB of gzip held whole. The largest row a service writes is a blob
# chunk (1 MiB, base64) or a package's statement (a package is at most 64 MiB).
LINE_LIMIT = MANIFEST_LIMIT
BATCH_ROWS, BATCH_BYTES = 500, 16 * 2**20


def restore(settings: Settings, archive: Path) -> dict[str, Any]:
    """Restore `archive` into the empty database and data directory `settings` name;
    the archive's manifest. RestoreError (nothing written) when the archive is damaged
    or the target holds data."""
    with _open(archive) as tar:
        manifest, members = read_checked(tar)
        url = settings.database_url
        if url.startswith("sqlite"):
            Path(url.split("///", 1)[1]).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        engine = create_engine(url)
        try:
            empty_database(engine)
            _check_data_dir(settings.data_dir)
            drop_tables(engine)
            migrate_to(url, manifest["revision"])
            with engine.begin() as conn:
                _insert_rows(conn, tar, members, manifest)
        finally:
            engine.dispose()
        from api.db.session import migrate

        migrate(url)  # on to this release's schema
        _write_files(tar, members, manifest, settings.data_dir)
    copy_blobs_across(settings, manifest)
    return manifest


def _open(archive: Path) -> tarfile.TarFile:
    try:
        return tarfile.open(archive, "r:*", tarinfo=_BoundedInfo)
    except (OSError, tarfile.TarError, EOFError) as exc:
        raise RestoreError(f"{archive} is not a backup archive: {exc}") from None


class _BoundedInfo(tarfile.TarInfo):
    """A member header, refused before tarfile reads what it declares into memory."""

    def _proc_member(self, tar: tarfile.TarFile) -> tarfile.TarInfo:
        # Not a tarfile.HeaderError: past the first member tarfile takes one for the
        # archive's end, and would restore what came before it.
        if self.type == tarfile.GNUTYPE_SPARSE or (
            self.type in _READ_WHOLE and self.size > HEADER_LIMIT
        ):
            raise RestoreError(f"a {self.size}-byte tar header of type {self.type!r}: refused")
        return super()._proc_member(tar)


def read_checked(tar: tarfile.TarFile) -> tuple[dict[str, Any], dict[str, tarfile.TarInfo]]:
    """The manifest and the members by name, once every member matches it."""
    try:
        members: dict[str, tarfile.TarInfo] = {}
        for info in tar.getmembers():
            if not info.isreg():
                raise RestoreError(f"{info.name[:200]!r} is not a plain file: refused")
            if info.name in members:
                raise RestoreError(f"{info.name[:200]!r} is in the archive twice")
            members[info.name] = info
        manifest = _manifest(tar, members)
        expected = {MANIFEST, *(f"{TABLES}/{t}.jsonl" for t in manifest["tables"])}
        expected |= {f"files/{rel}" for rel in manifest["files"]}
        if unlisted := sorted(set(members) ^ expected):
            raise RestoreError(f"the archive and its manifest differ on {unlisted[0][:200]!r}")
        # In the archive's order (tables, then files): a compressed one is read through
        # once here, not rewound for each member.
        for name, count in manifest["tables"].items():
            member = members[f"{TABLES}/{name}.jsonl"]
            _check_file(tar, member, manifest["table_files"][name])
            got = sum(1 for _ in _rows(tar, member)[1])
            if got != count:
                raise RestoreError(f"table {name}: {got} rows, the manifest says {count}")
        for rel, entry in manifest["files"].items():
            _check_file(tar, members[f"files/{rel}"], entry)
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise RestoreError(f"the archive is damaged: {exc}") from None
    return manifest, members


def _manifest(tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo]) -> dict[str, Any]:
    info = members.get(MANIFEST)
    if info is None:
        raise RestoreError("no manifest.json: not a backup archive (or cut short)")
    if info.size > MANIFEST_LIMIT:
        raise RestoreError("manifest.json is too large")
    try:
        manifest = json.loads(_member(tar, info).read())
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise RestoreError(f"manifest.json is not JSON: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise RestoreError(f"not a {FORMAT} archive")
    tables, files, revision = (manifest.get(k) for k in ("tables", "files", "revision"))
    if not isinstance(revision, str) or not isinstance(tables, dict):
        raise RestoreError("manifest.json has no revision or tables")
    if not isinstance(files, dict):
        raise RestoreError("manifest.json has no files")
    sums = manifest.get("table_files")
    if not isinstance(sums, dict) or set(sums) != set(tables):
        raise RestoreError("manifest.json: each table needs its size and sha256")
    if not all(isinstance(entry, dict) for entry in sums.values()):
        raise RestoreError("manifest.json: a bad table_files entry")
    for name, count in tables.items():
        if not TABLE_NAME.fullmatch(name) or type(count) is not int or count < 0:
            raise RestoreError(f"manifest.json: a bad table entry {name[:80]!r}")
    for rel, entry in files.items():
        try:
            check_path(rel)
        except ValueError as exc:
            raise RestoreError(str(exc)) from None
        if not isinstance(entry, dict) or type(entry.get("size")) is not int:
            raise RestoreError(f"manifest.json: a bad file entry {rel!r}")
    return manifest


def _member(tar: tarfile.TarFile, info: tarfile.TarInfo) -> IO[bytes]:
    fh = tar.extractfile(info)
    if fh is None:  # only for what is not a plain file, refused above
        raise RestoreError(f"{info.name!r} cannot be read")
    return fh


def _check_file(tar: tarfile.TarFile, info: tarfile.TarInfo, entry: dict[str, Any]) -> None:
    sha = hashlib.sha256()
    for chunk in _chunks(_member(tar, info)):
        sha.update(chunk)
    if info.size != entry.get("size") or sha.hexdigest() != entry.get("sha256"):
        raise RestoreError(f"{info.name!r} does not match its manifest entry (damaged)")


def _chunks(fh: IO[bytes]) -> Iterator[bytes]:
    return iter(lambda: fh.read(1 << 20), b"")


def _rows(tar: tarfile.TarFile, info: tarfile.TarInfo) -> tuple[list[str], Iterator[list[Any]]]:
    """A table member's column names and its rows, decoded."""
    lines = _lines(_member(tar, info), info.name)
    try:
        columns = json.loads(next(lines, b""))
    except (ValueError, UnicodeDecodeError, RecursionError):
        columns = None
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        raise RestoreError(f"{info.name!r} has no column names")

    def rows() -> Iterator[list[Any]]:
        for number, line in enumerate(lines, start=2):
            try:
                row = json.loads(line)
                if not isinstance(row, list) or len(row) != len(columns):
                    raise ValueError(f"{len(columns)} values expected")
                yield [decode_value(v) for v in row]
            except (ValueError, UnicodeDecodeError, RecursionError) as exc:
                raise RestoreError(f"{info.name!r} line {number}: {exc}") from None

    return columns, rows()


def _lines(fh: IO[bytes], name: str) -> Iterator[bytes]:
    while line := fh.readline(LINE_LIMIT + 1):
        if len(line) > LINE_LIMIT:
            raise RestoreError(f"{name!r}: a line over {LINE_LIMIT} bytes, no row a backup writes")
        yield line


def _insert_rows(
    conn: Connection, tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo], manifest: dict
) -> None:
    if conn.dialect.name == "postgresql":
        conn.execute(text("SET LOCAL TIME ZONE 'UTC'"))  # a zoneless timestamp is UTC
    meta = MetaData()
    meta.reflect(bind=conn)
    tables = {t.name: t for t in meta.sorted_tables if t.name != "alembic_version"}
    if unknown := sorted(set(manifest["tables"]) - set(tables)):
        raise RestoreError(f"revision {manifest['revision']} has no table {unknown[0]!r}")
    for table in reversed(list(tables.values())):
        conn.execute(table.delete())  # the rows the migrations seed (the first contest)
    for name, table in tables.items():
        if name in manifest["tables"]:
            _insert_table(conn, table, *_rows(tar, members[f"{TABLES}/{name}.jsonl"]))
            got = conn.scalar(select(func.count()).select_from(table))
            if got != manifest["tables"][name]:
                raise RestoreError(
                    f"table {name}: {got} rows written, not {manifest['tables'][name]}"
                )
    set_sequences(conn, tables.values())


def _insert_table(conn: Connection, table: Table, columns: list[str], rows: Iterator) -> None:
    if unknown := [c for c in columns if c not in table.columns]:
        raise RestoreError(f"table {table.name} has no column {unknown[0][:80]!r}")
    naive = conn.dialect.name == "sqlite"
    batch: list[dict[str, Any]] = []
    size = 0
    for row in rows:
        if naive:  # SQLite keeps UTC timestamps without their zone, as the service does
            row = [_utc_naive(v) for v in row]
        batch.append(dict(zip(columns, row, strict=True)))
        size += sum(len(v) for v in row if isinstance(v, bytes | str))
        if len(batch) >= BATCH_ROWS or size >= BATCH_BYTES:
            _insert_batch(conn, table, batch)
            batch, size = [], 0
    if batch:
        _insert_batch(conn, table, batch)


def _insert_batch(conn: Connection, table: Table, batch: list[dict[str, Any]]) -> None:
    """Insert the rows; a RestoreError naming the database's reason only. SQLAlchemy's
    own error (a traceback out of `python -m api.backup`) would print the rows, which
    hold password and token hashes; PostgreSQL's DETAIL line quotes a key's value."""
    try:
        conn.execute(table.insert(), batch)
    except StatementError as exc:
        reason = str(exc.orig).strip().splitlines()[0][:300] if str(exc.orig).strip() else ""
        raise RestoreError(
            f"table {table.name}: the database refused a row ({type(exc.orig).__name__}: {reason})"
        ) from None


def _utc_naive(value: Any) -> Any:
    from datetime import datetime

    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


def _check_data_dir(data_dir: Path) -> None:
    """Refuse a data directory that already holds what a backup restores."""
    for name in KEPT:
        path = data_dir / name
        if path.is_symlink() or path.is_file() or (path.is_dir() and any(path.rglob("*"))):
            raise RestoreError(
                f"{path} exists: restore onto an empty data directory (move it away first)"
            )


def _write_files(
    tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo], manifest: dict, data_dir: Path
) -> None:
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    root = data_dir.resolve()
    for rel in manifest["files"]:
        path = data_dir / check_path(rel)
        _mkdirs(root, path.parent)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(path, flags, 0o600)
        except OSError as exc:
            raise RestoreError(f"cannot write {path}: {exc}") from None
        with os.fdopen(fd, "wb") as out:
            for chunk in _chunks(_member(tar, members[f"files/{rel}"])):
                out.write(chunk)


def _mkdirs(root: Path, folder: Path) -> None:
    """Make `folder` (owner-only), refusing one that resolves outside `root`."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not folder.resolve().is_relative_to(root):
        raise RestoreError(f"{folder} leads outside the data directory: refused")
