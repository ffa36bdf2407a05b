"""api.backup without a running service: every value comes back exactly (integers
near 2^62, bytes, timestamps, JSON) on either backend and across them (the embedded
service moved onto PostgreSQL and back), sequences follow the restored ids, and a
restore refuses a target that holds data or a backup from a newer schema."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, insert, select, text

from api.backup.create import create
from api.backup.restore import RestoreError, restore
from api.db.models import AuditEntry, Blob, BlobChunk, BoardState, Case, Problem, ProblemVersion
from api.db.models import Team as TeamRow
from api.db.session import migrate
from api.settings import Settings
from tests.service import postgres_database

BIG = 2**62 + 12345
AT = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)
CHUNK = bytes(range(256)) * 3 + b"\x00\xff"
CHUNK2 = CHUNK[::-1]
SHA, SHA2 = (hashlib.sha256(body).hexdigest() for body in (CHUNK, CHUNK2))
DETAIL = {"nested": [1, 2**53 + 1, None, "é ☃ \x00"], "flag": True, "f": 0.1}


@contextmanager
def target(backend: str, tmp: Path, name: str) -> Iterator[Settings]:
    data = tmp / name
    if backend == "sqlite":
        yield Settings(data_dir=data, database_url=f"sqlite:///{data}/db.sqlite")
        return
    with postgres_database() as url:
        yield Settings(data_dir=data, database_url=url)


def fill(settings: Settings) -> None:
    """A service's rows with the awkward values, and kept files."""
    settings.data_dir.mkdir(parents=True)
    migrate(settings.database_url)
    engine = create_engine(settings.database_url)
    with engine.begin() as conn:
        conn.execute(insert(TeamRow), [{"name": f"team {i} ☃", "created_at": AT} for i in range(7)])
        conn.execute(insert(Problem), {"id": 40, "slug": "p", "current_version_id": 41})
        conn.execute(insert(ProblemVersion), {
            "id": 41, "problem_id": 40, "number": 1, "name": "P", "type": "offset",
            "statement": "x" * 5000, "package_path": "", "time_limit_s": 1.25, "sha256": "0" * 64,
        })  # fmt: skip
        case = {"version_id": 41, "name": "c", "split": "hidden", "capacity": BIG,
                "lower_bound": BIG - 1, "items": 3}  # fmt: skip
        conn.execute(insert(Case), case)
        conn.execute(insert(AuditEntry), {"action": "test", "detail": DETAIL, "at": AT})
        conn.execute(text("UPDATE board_state SET version = :v"), {"v": BIG})
        if settings.blob_store == "database":
            conn.execute(insert(Blob), {"sha256": SHA2, "size": len(CHUNK2), "created_at": AT})
            conn.execute(insert(BlobChunk), {"sha256": SHA2, "seq": 0, "data": CHUNK2})
    engine.dispose()
    files = {f"blobs/{SHA[:2]}/{SHA}": CHUNK, "secrets/hidden-seed": b"seed\n",
             "problems/p/data/hidden/c 1.csv": b"id\n", "secret_key": b"k"}  # fmt: skip
    for rel, body in files.items():
        (settings.data_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (settings.data_dir / rel).write_bytes(body)
    (settings.data_dir / "cache").mkdir()
    (settings.data_dir / "cache" / "left-behind").write_bytes(b"x")


def rows(settings: Settings) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's rows (timestamps in UTC, zoneless: SQLite keeps no zone)."""
    engine = create_engine(settings.database_url)
    out = {}
    with engine.connect() as conn:
        for model in (TeamRow, Problem, ProblemVersion, Case, AuditEntry, BoardState):
            table = model.__table__
            found = conn.execute(select(table).order_by(*table.primary_key.columns)).all()
            out[table.name] = [tuple(_utc(v) for v in row) for row in found]
        out["ids"] = [(conn.execute(insert(TeamRow).values(name="next")).inserted_primary_key[0],)]
    engine.dispose()
    return out


def _utc(value: Any) -> Any:
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


@pytest.mark.parametrize(
    "source,dest",
    [
        ("sqlite", "sqlite"),
        ("postgres", "postgres"),
        ("sqlite", "postgres"),
        ("postgres", "sqlite"),
    ],
)
def test_every_value_comes_back_exactly(source: str, dest: str, tmp_path: Path) -> None:
    with target(source, tmp_path, "a") as a, target(dest, tmp_path, "b") as b:
        fill(a)
        manifest = create(a, tmp_path / "b.tar")
        assert "cache/left-behind" not in manifest["files"]
        assert restore(b, tmp_path / "b.tar")["tables"] == manifest["tables"]
        got, want = rows(b), rows(a)
        assert got == want
        case = got["cases"][0]
        assert BIG in case and isinstance(case[case.index(BIG)], int)
        assert any(DETAIL in row for row in got["audit_log"])
        for rel in manifest["files"]:
            assert (b.data_dir / rel).read_bytes() == (a.data_dir / rel).read_bytes()
        assert not (b.data_dir / "cache" / "left-behind").exists()
        assert_blob_moved(a, b)


def assert_blob_moved(a: Settings, b: Settings) -> None:
    """Each blob of the source's store is read from the target's, whichever each is."""
    from api.blobs import blob_store

    blobs = {SHA: CHUNK} | ({SHA2: CHUNK2} if a.blob_store == "database" else {})
    for sha, body in blobs.items():
        assert blob_store(b).local_path(sha).read_bytes() == body


def test_a_target_with_data_or_a_newer_backup_is_refused(tmp_path: Path) -> None:
    with target("sqlite", tmp_path, "a") as a, target("sqlite", tmp_path, "b") as b:
        fill(a)
        create(a, tmp_path / "a.tar")
        with pytest.raises(RestoreError, match="already holds data"):
            restore(a, tmp_path / "a.tar")  # onto itself: a database with data
        b.data_dir.mkdir()
        migrate(b.database_url)  # a host whose service started once: still empty
        (b.data_dir / "secrets").mkdir()
        (b.data_dir / "secrets" / "hidden-seed").write_text("another")
        with pytest.raises(RestoreError, match="empty data directory"):
            restore(b, tmp_path / "a.tar")
        (b.data_dir / "secrets" / "hidden-seed").unlink()
        newer = rewrite_manifest(tmp_path / "a.tar", tmp_path / "newer.tar", revision="9999")
        with pytest.raises(RestoreError, match="newer than this release"):
            restore(b, newer)
        restore(b, tmp_path / "a.tar")  # the refusals wrote nothing in the way


def rewrite_manifest(src: Path, dest: Path, **changes: Any) -> Path:
    with tarfile.open(src) as old, tarfile.open(dest, "w") as new:
        for info in old.getmembers():
            data = old.extractfile(info).read()
            if info.name == "manifest.json":
                data = json.dumps(json.loads(data) | changes).encode()
                info.size = len(data)
            new.addfile(info, io.BytesIO(data))
    return dest


def test_timestamps_keep_their_instant_whatever_the_zone(tmp_path: Path) -> None:
    """A timestamp written with another offset is the same instant after a restore."""
    zone = timezone(timedelta(hours=-7))
    with target("postgres", tmp_path, "a") as a, target("sqlite", tmp_path, "b") as b:
        migrate(a.database_url)
        engine = create_engine(a.database_url)
        with engine.begin() as conn:
            conn.execute(text("SET TIME ZONE 'America/Denver'"))
            conn.execute(insert(TeamRow), {"name": "t", "created_at": AT.astimezone(zone)})
        engine.dispose()
        create(a, tmp_path / "z.tar")
        restore(b, tmp_path / "z.tar")
        engine = create_engine(b.database_url)
        with engine.connect() as conn:
            assert conn.scalar(select(TeamRow.created_at)) == AT.replace(tzinfo=None)
        engine.dispose()


def test_a_backup_of_an_older_release_restores_and_upgrades(tmp_path: Path) -> None:
    """Rows of an older schema go into that schema, which then upgrades as any host's."""
    from alembic.script import ScriptDirectory

    from api.backup.restore_db import migrate_to
    from tests.migration_rows import alembic_config

    head = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()

    with target("sqlite", tmp_path, "a") as a, target("sqlite", tmp_path, "b") as b:
        a.data_dir.mkdir()
        migrate_to(a.database_url, "0013")  # before contests
        engine = create_engine(a.database_url)
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO teams (name, disqualified, system, created_at) "
                              "VALUES ('old', 0, 0, '2026-01-02 03:04:05.000000')"))  # fmt: skip
        engine.dispose()
        assert create(a, tmp_path / "old.tar")["revision"] == "0013"
        restore(b, tmp_path / "old.tar")
        engine = create_engine(b.database_url)
        with engine.connect() as conn:
            assert conn.scalar(text("SELECT version_num FROM alembic_version")) == head
            assert conn.scalar(select(TeamRow.name)) == "old"
            assert conn.scalar(text("SELECT count(*) FROM contest")) == 1  # 0014's own row
        engine.dispose()
