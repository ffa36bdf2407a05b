"""A restore reads a hostile archive in bounded memory and answers a RestoreError:
tar headers that tarfile would read whole (a pax record or GNU long name declaring
GiB, which a few KiB of gzip hold), a sparse member, a table row of one endless line,
and JSON nested past Python's recursion limit."""

from __future__ import annotations

import gzip
import hashlib
import importlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from api.backup.create import create
from api.backup.restore import RestoreError, restore
from api.db.session import migrate
from api.settings import Settings

# The module, not the function api.backup exports under the same name.
restore_module = importlib.import_module("api.backup.restore")
DECLARED = 64 * 2**20  # over the header limit; the archive itself stays a few KiB


def target(tmp: Path) -> Settings:
    return Settings(data_dir=tmp / "new", database_url=f"sqlite:///{tmp}/new/db.sqlite")


def header_bomb(path: Path, kind: bytes) -> Path:
    """A tar.gz whose first header declares DECLARED bytes of pax record or long name."""
    with gzip.open(path, "wb") as out:
        info = tarfile.TarInfo("././@LongLink")
        info.type, info.size = kind, DECLARED
        out.write(info.tobuf(format=tarfile.USTAR_FORMAT))
        record = b"%d comment=" % DECLARED
        out.write(record)
        left = DECLARED - len(record) - 1
        while left > 0:
            out.write(b"a" * min(left, 2**20))
            left -= 2**20
        out.write(b"\n" + b"\0" * 1024)
    return path


@pytest.mark.parametrize("kind", [tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.GNUTYPE_LONGNAME])
def test_a_huge_declared_header_is_refused_unread(tmp_path: Path, kind: bytes) -> None:
    archive = header_bomb(tmp_path / "bomb.tar.gz", kind)
    with pytest.raises(RestoreError, match="tar header"):
        restore(target(tmp_path), archive)
    assert not (tmp_path / "new").exists()


def test_a_sparse_member_is_refused(tmp_path: Path) -> None:
    info = tarfile.TarInfo("files/blobs/ab/cd")
    info.type = tarfile.GNUTYPE_SPARSE
    archive = tmp_path / "sparse.tar"
    archive.write_bytes(info.tobuf(format=tarfile.GNU_FORMAT) + b"\0" * 1024)
    with pytest.raises(RestoreError, match="tar header"):
        restore(target(tmp_path), archive)


def backup_with(tmp: Path, table: str, body: bytes) -> Path:
    """A real backup whose `table` member is `body` (its manifest entry to match)."""
    data = tmp / "old"
    data.mkdir()
    source = Settings(data_dir=data, database_url=f"sqlite:///{data}/db.sqlite")
    migrate(source.database_url)
    good = tmp / "good.tar"
    create(source, good)
    out = tmp / "changed.tar"
    name = f"tables/{table}.jsonl"
    with tarfile.open(good) as old, tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as new:
        for info in old.getmembers():
            data_ = old.extractfile(info).read()
            if info.name == name:
                data_ = body
            if info.name == "manifest.json":
                manifest = json.loads(data_)
                manifest["tables"][table] = body.count(b"\n") - 1
                entry = {"size": len(body), "sha256": hashlib.sha256(body).hexdigest()}
                manifest["table_files"][table] = entry
                data_ = json.dumps(manifest).encode()
            info.size = len(data_)
            new.addfile(info, io.BytesIO(data_))
    return out


def test_a_row_longer_than_the_line_limit_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(restore_module, "LINE_LIMIT", 4096, raising=False)
    long_name = json.dumps([1, "x" * 10_000, {"t": "2026-01-01T00:00:00"}])
    body = b'["id", "name", "created_at"]\n' + long_name.encode() + b"\n"
    archive = backup_with(tmp_path, "teams", body)
    with pytest.raises(RestoreError, match="a line over 4096 bytes"):
        restore(target(tmp_path), archive)


@pytest.mark.parametrize("where", ["columns", "row"])
def test_json_nested_too_deeply_is_a_clear_refusal(tmp_path: Path, where: str) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    header = deep if where == "columns" else b'["id", "name", "created_at"]'
    body = header + b"\n" + (deep + b"\n" if where == "row" else b"")
    archive = backup_with(tmp_path, "teams", body)
    with pytest.raises(RestoreError):
        restore(target(tmp_path), archive)


def test_a_row_the_database_refuses_is_told_without_the_rows(tmp_path: Path) -> None:
    # Rows SQLite took but the target refuses (a NULL here; on PostgreSQL a name longer
    # than its column, a NUL in a text, an orphan row): the reason, never the values.
    secret = "pbkdf2_sha256$600000$SALT$HASH-THAT-MUST-NOT-BE-PRINTED"
    row = json.dumps([1, secret, {"t": "2026-01-01T00:00:00"}, None])
    body = b'["id", "name", "created_at", "disqualified"]\n' + row.encode() + b"\n"
    archive = backup_with(tmp_path, "teams", body)
    with pytest.raises(RestoreError, match="table teams: the database refused a row") as caught:
        restore(target(tmp_path), archive)
    assert "HASH-THAT" not in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
