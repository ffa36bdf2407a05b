"""Each task names itself HOST:PID#NONCE (worker.tasks.worker_name, finding D1): a worker
container restarted under its hostname gets its old pids back, and a name without the
nonce let the new process's heartbeat keep its dead predecessor's running cases alive,
so the owner waited for their deadline instead of taking them over."""

from __future__ import annotations

import os
import socket
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from api.db.models import CaseRun, utcnow
from api.db.session import session_scope
from tests.service import worker_pid
from tests.test_build_blobs import bootstrapped, judging
from worker.cases import Heartbeat


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    with bootstrapped(tmp_path, monkeypatch, {}) as config:  # the embedded backend
        yield config


def test_each_task_of_one_process_has_its_own_name() -> None:
    from worker.tasks import worker_name

    names = {worker_name() for _ in range(50)}
    assert len(names) == 50
    assert all(n.startswith(f"{socket.gethostname()}:{os.getpid()}#") for n in names)
    assert {worker_pid(n) for n in names} == {os.getpid()}


def test_a_process_with_a_dead_ones_pid_does_not_keep_its_cases_alive(settings) -> None:
    from worker.tasks import worker_name

    dead, alive = worker_name(), worker_name()  # one host and pid: a restarted container
    old = utcnow() - timedelta(minutes=5)
    with session_scope(settings.database_url) as db:
        jid = judging(db, "running", None)
        for case, who in (("dead's", dead), ("alive's", alive)):
            db.add(CaseRun(judging_id=jid, attempt=0, case=case, worker=who,
                           status="running", started_at=old, heartbeat_at=old))  # fmt: skip
    Heartbeat(settings.database_url, jid, 0, alive, every_s=1.0, owner=False).beat()
    with session_scope(settings.database_url) as db:
        beats = {r.case: r.heartbeat_at for r in db.scalars(select(CaseRun))}
    assert beats["dead's"] == old.replace(tzinfo=beats["dead's"].tzinfo)  # still stale
    assert beats["alive's"] > beats["dead's"]
