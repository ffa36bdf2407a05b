"""Worker presence: each Celery worker, idle or busy, keeps a `workers` row fresh (a
heartbeat every `worker_heartbeat_s`), so /healthz and the admin pages can say which
workers are alive (api.workers). A warm shutdown marks the row `stopping` at once, and
`stopped` when the worker is gone; a killed worker's row just goes stale.

Every write opens its own connection (NullPool): the heartbeat runs in Celery's main
process, which forks pool children, and a pooled connection must never cross a fork.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cache
from importlib import metadata

from celery.signals import (
    task_postrun,
    task_prerun,
    worker_ready,
    worker_shutdown,
    worker_shutting_down,
)
from sqlalchemy import Engine, create_engine, delete, update
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

from api.db.models import WorkerRow, utcnow
from api.queue import CASES_TASK, JUDGE_TASK
from api.settings import Settings

log = logging.getLogger("memorace.worker")
PRUNE_AFTER = timedelta(days=1)  # rows of workers gone this long are removed


@cache
def _engine(url: str) -> Engine:
    args = {"timeout": 30} if url.startswith("sqlite") else {}
    return create_engine(url, poolclass=NullPool, connect_args=args)


def _version() -> str:
    try:
        return metadata.version("memorace")
    except metadata.PackageNotFoundError:
        return "unknown"


class Presence:
    """The heartbeat of one worker (its main process), on a daemon thread."""

    def __init__(self, settings: Settings, name: str, gpu_slot: int | None, sandbox: str):
        self.settings, self.name = settings, name
        self.gpu_slot, self.sandbox = gpu_slot, sandbox
        self.stopping = False
        self._wake = threading.Event()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="presence", daemon=True)

    def start(self) -> None:
        self._announce()
        self._thread.start()

    def shutting_down(self) -> None:
        """From Celery's signal handler: only wake the thread (no database work there)."""
        self.stopping = True
        self._wake.set()

    def stop(self) -> None:
        self._done.set()
        self._wake.set()
        self._thread.join(timeout=10)
        now = utcnow()
        with Session(_engine(self.settings.database_url)) as db, db.begin():
            db.execute(
                update(WorkerRow)
                .where(WorkerRow.name == self.name, WorkerRow.pid == os.getpid())
                .values(state="stopped", stopped_at=now, last_seen=now, current_task="",
                        current_judging_id=None)
            )  # fmt: skip

    def _announce(self) -> None:
        now = utcnow()
        fields = {
            "host": socket.gethostname(), "pid": os.getpid(), "gpu_slot": self.gpu_slot,
            "sandbox": self.sandbox, "version": _version(), "state": "running",
            "current_task": "", "current_judging_id": None, "started_at": now,
            "last_seen": now, "stopped_at": None,
        }  # fmt: skip
        with Session(_engine(self.settings.database_url)) as db, db.begin():
            row = db.get(WorkerRow, self.name, with_for_update=True)
            if row is None:
                db.add(WorkerRow(name=self.name, **fields))
            else:  # the same name started again (a restart): it is this worker now
                for key, value in fields.items():
                    setattr(row, key, value)
            db.execute(delete(WorkerRow).where(WorkerRow.last_seen < now - PRUNE_AFTER))

    def _loop(self) -> None:
        while not self._done.is_set():
            self._wake.wait(self.settings.worker_heartbeat_s)
            self._wake.clear()
            if self._done.is_set():
                return
            try:
                self._beat()
            except Exception as exc:  # a database hiccup must not stop the beats
                log.warning("worker heartbeat failed: %s", exc)

    def _beat(self) -> None:
        values: dict[str, object] = {"last_seen": utcnow()}
        if self.stopping:
            values["state"] = "stopping"
        with Session(_engine(self.settings.database_url)) as db, db.begin():
            mine = (WorkerRow.name == self.name, WorkerRow.pid == os.getpid())
            done = db.execute(
                update(WorkerRow).where(*mine, WorkerRow.state != "stopped").values(**values)
            )
            gone = done.rowcount == 0 and db.get(WorkerRow, self.name) is None
        if gone and not self.stopping:  # pruned or removed by hand: announce again
            self._announce()


def set_task(settings: Settings, name: str, task: str, judging_id: int | None) -> None:
    """The task a worker runs now ("" = idle); from the process that runs it."""
    try:
        with Session(_engine(settings.database_url)) as db, db.begin():
            db.execute(
                update(WorkerRow)
                .where(WorkerRow.name == name)
                .values(current_task=task[:100], current_judging_id=judging_id)
            )
    except Exception as exc:  # only a display: never fail the task for it
        log.warning("cannot record the task of worker %s: %s", name, exc)


# --- Celery signals -----------------------------------------------------------------------
@dataclass
class _Hookup:
    settings: Settings
    gpu_slot: int | None
    current: list[Presence] = field(default_factory=list)  # this process's, once ready


_hookup: list[_Hookup] = []


def connect_signals(settings: Settings, gpu_slot: int | None) -> None:
    """Hook the presence into a worker's life (worker.tasks calls it once, after the
    receiver that migrates the schema: receivers run in the order they connect)."""
    _hookup[:] = [_Hookup(settings, gpu_slot)]
    worker_ready.connect(_on_ready, weak=False)
    worker_shutting_down.connect(_on_shutting_down, weak=False)
    worker_shutdown.connect(_on_shutdown, weak=False)
    task_prerun.connect(_on_task_start, weak=False)
    task_postrun.connect(_on_task_end, weak=False)


def _on_ready(sender: object = None, **_: object) -> None:
    from judge.sandbox import default_sandbox_name
    from judge.sandbox.local_isolation import recorded_name

    hook = _hookup[0]
    name = str(getattr(sender, "hostname", "") or f"{socket.gethostname()}:{os.getpid()}")
    # "local UNISOLATED" in development mode: the organizer sees it on /healthz and the admin page
    box = recorded_name(hook.settings.sandbox or default_sandbox_name())
    me = Presence(hook.settings, name, hook.gpu_slot, box)
    try:
        me.start()
    except Exception:  # it still judges; /healthz just does not list it
        log.exception("worker %s cannot announce itself", name)
        return
    hook.current.append(me)


def _on_shutting_down(**_: object) -> None:
    for me in _hookup[0].current:
        me.shutting_down()


def _on_shutdown(**_: object) -> None:
    current = _hookup[0].current
    while current:
        try:
            current.pop().stop()
        except Exception:
            log.exception("worker cannot mark itself stopped")


def _task_worker(task: object) -> str | None:
    """The nodename of the worker running `task` (the name its presence row has)."""
    return getattr(getattr(task, "request", None), "hostname", None)


def _on_task_start(task: object = None, args: object = None, **_: object) -> None:
    if (name := _task_worker(task)) is None:
        return
    job = list(args) if isinstance(args, list | tuple) else []
    task_name = str(getattr(task, "name", ""))
    judging_id = int(job[0]) if task_name in (JUDGE_TASK, CASES_TASK) and job else None
    label = " ".join([task_name.rpartition(".")[2], *map(str, job)])
    set_task(_hookup[0].settings, name, label, judging_id)


def _on_task_end(task: object = None, **_: object) -> None:
    if name := _task_worker(task):
        set_task(_hookup[0].settings, name, "", None)
