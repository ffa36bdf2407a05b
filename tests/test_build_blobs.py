"""worker.build_blobs: a build shared through the database blob store goes once its
judging has ended, unless a live judging or any other row holds the same bytes (the
store is content-addressed). Real PostgreSQL (the database store needs it)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import select

from api.blobs import blob_store
from api.bootstrap import bootstrap
from api.db.models import Blob, BlobChunk, Judging, ProblemVersion, Submission, Team, User
from api.db.session import session_scope
from api.settings import Settings, get_settings
from tests.service import postgres_database
from tests.test_package import make_package
from worker import build_blobs

NAMES = itertools.count()


@contextmanager
def bootstrapped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str]
) -> Iterator[Settings]:
    """A bootstrapped service's settings, read as the service reads them: from its
    environment (`env` beside a data dir in `tmp_path`; no database URL: the embedded)."""
    monkeypatch.delenv("MEMORACE_DATABASE_URL", raising=False)
    for name, value in {"MEMORACE_DATA_DIR": str(tmp_path / "data"), **env}.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    try:
        config = get_settings()
        config.ensure_dirs()
        bootstrap(config, "admin", [make_package(tmp_path / "pkg")])
        yield config
    finally:
        get_settings.cache_clear()


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    with postgres_database() as url:
        env = {"MEMORACE_BLOB_STORE": "database", "MEMORACE_DATABASE_URL": url}
        with bootstrapped(tmp_path, monkeypatch, env) as config:
            yield config


def judging(db, status: str, build: str | None, upload: str = "0" * 64) -> int:
    team = Team(name=f"team {next(NAMES)}")
    db.add(team)
    db.flush()
    user = db.scalar(select(User))
    version = db.scalar(select(ProblemVersion))
    sub = Submission(team_id=team.id, user_id=user.id, version_id=version.id, sha256=upload,
                     filename="p.py", language="python", size=1)  # fmt: skip
    db.add(sub)
    db.flush()
    row = Judging(submission_id=sub.id, status=status, build_blob=build)
    db.add(row)
    db.flush()
    return row.id


def stored(settings: Settings) -> set[str]:
    with session_scope(settings.database_url) as db:
        return set(db.scalars(select(Blob.sha256)))


def test_ended_builds_go_and_held_ones_stay(settings: Settings):
    store = blob_store(settings)
    ended, live, twin = (store.put_bytes(f"build {n}".encode() * 100_000) for n in range(3))
    with session_scope(settings.database_url) as db:
        done = [judging(db, s, ended) for s in ("final", "failed", "superseded")]
        judging(db, "final", live)
        judging(db, "running", live)  # a rejudge of the same bytes still judging
        judging(db, "final", twin, upload=twin)  # a contestant uploaded these very bytes
    before = stored(settings)
    assert build_blobs.collect(settings) == 1
    assert before - stored(settings) == {ended}
    with session_scope(settings.database_url) as db:
        assert db.scalar(select(BlobChunk.seq).where(BlobChunk.sha256 == ended)) is None
        ended_rows = db.scalars(select(Judging).where(Judging.id.in_(done))).all()
        assert {j.build_blob for j in ended_rows} == {None}
        running = db.scalar(select(Judging).where(Judging.status == "running"))
        assert running.build_blob == live
    assert build_blobs.collect(settings) == 0  # nothing more to do
    with session_scope(settings.database_url) as db:
        running = db.scalar(select(Judging).where(Judging.status == "running"))
        running.status = "final"
    assert build_blobs.collect(settings) == 1 and live not in stored(settings)
    assert twin in stored(settings) and store.local_path(twin).read_bytes().startswith(b"build 2")


def test_the_local_store_has_nothing_to_collect(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("MEMORACE_BLOB_STORE", "local")
    assert build_blobs.collect(Settings(data_dir=tmp_path)) == 0
