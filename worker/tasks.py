"""Celery tasks: thin adapters from queue messages to worker.judging."""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time

from celery.signals import (
    after_setup_logger,
    worker_init,
    worker_process_init,
    worker_process_shutdown,
    worker_ready,
)

from api import filebroker
from api.db.session import migrate
from api.queue import CASES_TASK, IMPORT_TASK, JUDGE_TASK, REAP_TASK, RESCORE_TASK
from judge.sandbox import cores
from worker import imports, judging, presence, reaper, scratch
from worker.celery_app import app, settings
from worker.rescore import rescore_version

log = logging.getLogger("memorace.worker")
DEFER_S = 2.0  # a deferred rejudge or baseline looks again this much later


def worker_name() -> str:
    """A task's name in judgings and case runs: HOST:PID (what an operator looks for)
    and a nonce. A worker container restarted under its hostname gets its old pids
    back, and with the name alone the new process's heartbeat would keep its dead
    predecessor's cases alive until their deadline (worker.cases)."""
    return f"{socket.gethostname()}:{os.getpid()}#{secrets.token_hex(3)}"


def gpu_slot() -> int | None:
    """The GPU this worker process owns: MEMORACE_GPU_SLOT, else none (CPU problems)."""
    slot = os.environ.get("MEMORACE_GPU_SLOT", "")
    return int(slot) if slot.isdigit() else None


@after_setup_logger.connect
def _json_logs(logger: logging.Logger, **_: object) -> None:
    """Celery's own lines and ours as JSON, one object per line."""
    from api.logs import formatter, setup

    for handler in logger.handlers:
        handler.setFormatter(formatter())
    setup()


@worker_init.connect
def _check_scratch(**_: object) -> None:
    """Refuse to start (exit status 3, one log line saying why) rather than judge every
    submission wrongly: see worker.startup."""
    from worker.startup import refusal, unisolated_warning

    if why := refusal(settings):
        log.critical("worker refuses to start: %s", why)
        raise SystemExit(3)
    if warning := unisolated_warning(settings):
        log.warning(warning)


@worker_ready.connect
def _on_ready(**_: object) -> None:
    migrate(settings.database_url)
    _remove_leftovers()
    # This host's housekeeping, in the main process: the pool may be busy judging.
    threading.Thread(target=_housekeeping, name="housekeeping", daemon=True).start()


def _housekeeping() -> None:
    while True:
        time.sleep(settings.reap_interval_s)
        try:
            _remove_leftovers()
        except Exception as exc:  # e.g. the engine restarting: try again next time
            log.warning("removing leftovers of dead workers failed: %s", exc)


presence.connect_signals(settings, gpu_slot())  # after _on_ready: the schema exists


_claims: list[cores.Claim] = []  # this process's cores, held for its life


def own_cores() -> None:
    """Once per judging process: claim its slot's cores (judge.sandbox.cores):
    MEMORACE_CORES (a core list) when set, else MEMORACE_SLOT_CORES free ones (default
    1; 0: no pinning)."""
    if _claims:
        return
    per_slot = os.environ.get("MEMORACE_SLOT_CORES") or "1"
    try:
        per = int(per_slot) if per_slot.isdigit() else 1
        # the host's temporary folder (shared by a host's worker containers), never
        # this process's own scratch folder, which `scratch.enter` made the default
        got = cores.claim(per, _env_cores(), scratch.SYSTEM_TMP / cores.LOCK_DIR)
    except cores.CoreSpecError as exc:
        log.critical("worker refuses to start: MEMORACE_CORES: %s", exc)
        raise SystemExit(3) from None
    _claims.append(got)
    (log.info if got.cores else log.warning)("judging process %s: %s", os.getpid(), got.why)


def _env_cores() -> str:
    return os.environ.get("MEMORACE_CORES", "").strip()


@worker_process_init.connect
def _process_init(**_: object) -> None:
    scratch.enter()
    own_cores()


@worker_process_shutdown.connect
def _process_shutdown(**_: object) -> None:
    scratch.leave()


@app.task(name=JUDGE_TASK, bind=True, max_retries=None)
def judge(self, judging_id: int) -> str:  # type: ignore[no-untyped-def]
    scratch.enter()  # also under a pool without worker_process_init (solo, threads)
    own_cores()
    try:
        return judging.run_judging(settings, judging_id, worker_name(), gpu_slot())
    except judging.Busy as exc:
        # Maybe a live worker runs it, maybe a dead one did: look again once the
        # heartbeat would have gone stale.
        raise self.retry(exc=exc, countdown=settings.heartbeat_timeout_s) from None
    except judging.Deferred as exc:
        raise self.retry(exc=exc, countdown=DEFER_S) from None
    except Exception as exc:
        log.exception("judging %s failed", judging_id)
        judging.fail_judging(settings, judging_id, f"{type(exc).__name__}: {exc}", retry=True)
        if judging.still_queued(settings, judging_id):
            raise self.retry(exc=exc, countdown=5, max_retries=judging.MAX_ATTEMPTS) from None
        return "failed"


@app.task(name=CASES_TASK)
def judge_cases(judging_id: int, attempt: int) -> str:
    """A helper of a running judging (worker.cases): never retried, never fails the
    judging; whatever it leaves, the judging's owner judges."""
    scratch.enter()
    own_cores()
    try:
        return judging.run_helper(settings, judging_id, attempt, worker_name(), gpu_slot())
    except Exception:
        log.exception("helping judging %s failed", judging_id)
        return "failed"


@app.task(name=RESCORE_TASK)
def rescore(version_id: int, actor_id: int | None) -> int:
    return rescore_version(settings, version_id)


@app.task(name=IMPORT_TASK)
def import_package(job_id: int) -> str:
    return imports.run(settings, job_id)


@app.task(name=REAP_TASK)
def reap() -> None:
    """Only for a reap message from an older beat: beat now runs the reaper itself."""
    reaper.run(settings)


def _remove_leftovers() -> None:
    """Scratch folders and containers of judges killed without cleanup (SIGKILL, OOM)
    on this host, and the embedded broker's leftover files."""
    from judge.sandbox.docker import engine_available, remove_orphans

    folders = scratch.remove_orphans()
    if folders:
        log.warning("removed %d scratch folders left by dead workers", folders)
    embedded = settings.broker_url.startswith("filesystem")
    if embedded and (files := filebroker.sweep(settings.queue_dir)):
        log.warning("removed %d queue files left by dead processes", files)
    if settings.sandbox in ("", "docker") and engine_available():
        removed = remove_orphans()
        if removed:
            log.warning("removed %d sandbox containers left by dead workers", removed)
