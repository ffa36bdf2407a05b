"""An import job left `running` by a worker that died (or brought back as running by a
restore: no worker holds it) is re-sent by the reaper once its time limit is long past;
one within its limit is left alone; one taken before migration 0015 (no start) starts
its clock at the reaper's first look. Real database and the embedded broker; the
re-sent message is read back from the broker."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from api import queue
from api.actions import imports
from api.db.models import ImportJob, utcnow
from api.db.session import migrate, session_scope
from api.settings import get_settings


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MEMORACE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MEMORACE_IMPORT_TIME_LIMIT_S", "600")
    monkeypatch.setenv("MEMORACE_REQUEUE_AFTER_S", "120")
    get_settings.cache_clear()
    queue.producer.cache_clear()
    config = get_settings()
    config.ensure_dirs()
    migrate(config.database_url)
    yield config
    get_settings.cache_clear()
    queue.producer.cache_clear()


def test_a_running_job_past_its_limit_is_sent_again(settings):
    now = utcnow()
    with session_scope(settings.database_url) as db:
        jobs = {
            "dead": ImportJob(status="running", started_at=now - timedelta(seconds=900)),
            "working": ImportJob(status="running", started_at=now - timedelta(seconds=500)),
            "pre-0015": ImportJob(status="running", started_at=None),
            "done": ImportJob(status="done", started_at=now - timedelta(days=1)),
        }
        db.add_all(jobs.values())
        db.flush()
        ids = {name: job.id for name, job in jobs.items()}
    assert imports.resend_lost(settings) == [ids["dead"]]
    assert ids["dead"] in (queue.messages_in_broker(queue.IMPORT_TASK) or set())
    with session_scope(settings.database_url) as db:
        rows = {job.id: job for job in db.scalars(select(ImportJob))}
        dead = rows[ids["dead"]]
        assert dead.status == "queued" and "stopped answering" in dead.detail
        assert rows[ids["working"]].status == "running"
        assert rows[ids["pre-0015"]].status == "running" and rows[ids["pre-0015"]].started_at
        assert rows[ids["done"]].status == "done"
    assert imports.resend_lost(settings) == []  # the message is held now; nothing twice


def test_taking_a_job_stamps_its_start(settings):
    with session_scope(settings.database_url) as db:
        job = ImportJob(status="queued", filename="p.zip", sha256="0" * 64)
        db.add(job)
        db.flush()
        job_id = job.id
    assert imports.run_job(settings, job_id) == "failed"  # no upload stored: a clear failure
    with session_scope(settings.database_url) as db:
        job = db.get(ImportJob, job_id)
        assert job.started_at is not None and job.finished_at is not None
        assert "unreadable" in job.detail, job.detail
