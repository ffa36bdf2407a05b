"""The queue, seen from the API: Celery configuration shared with the workers, and a
thin producer that enqueues tasks by name (the API never imports `worker`).

A queue message is only a wake-up call: the `judgings` row is the truth, so a
lost message costs a delay (the reaper re-sends it), never a submission. The reaper
looks into the broker (`messages_in_broker`) so that it re-sends only what is lost,
never what merely waits behind a backlog.
"""

from __future__ import annotations

import base64
import json
import time
from contextlib import suppress
from functools import cache
from typing import Any

from celery import Celery

from api import filebroker
from api.settings import Settings, get_settings

JUDGE_TASK = "memorace.judge"
# A helper: judges cases of a running judging beside its first worker (worker.cases).
CASES_TASK = "memorace.judge_cases"
RESCORE_TASK = "memorace.rescore"
REAP_TASK = "memorace.reap"
IMPORT_TASK = "memorace.import_package"
QUEUE = "memorace"
# Redis priorities: 0 is served first. Fresh submissions before rejudges.
PRIORITY_FRESH, PRIORITY_REJUDGE = 0, 6
# Longer than any judging (cases x time limit + build), or Redis hands a long judging
# to a second worker while the first still runs it. Six hours; see worker/README.
VISIBILITY_TIMEOUT_S = 6 * 3600


def celery_config(settings: Settings) -> dict[str, Any]:
    options: dict[str, Any] = {"visibility_timeout": VISIBILITY_TIMEOUT_S}
    if settings.broker_url.startswith("redis"):
        options |= {
            "priority_steps": list(range(10)),
            "sep": ":",
            "queue_order_strategy": "priority",
        }
    transport: dict[str, str] = {}
    if settings.broker_url.startswith("filesystem"):
        # The embedded broker: plain files, no server (one machine only), each written
        # whole before a worker can see it (api.filebroker).
        transport = {"broker_transport": filebroker.TRANSPORT}
        queue = str(settings.queue_dir)
        options |= {
            "data_folder_in": queue,
            "data_folder_out": queue,
            "control_folder": str(settings.queue_dir / "control"),
            "polling_interval": settings.queue_poll_s,
        }
    return {
        "broker_url": settings.broker_url,
        **transport,
        "broker_transport_options": options,
        "broker_connection_retry_on_startup": True,
        "task_default_queue": QUEUE,
        "task_acks_late": True,  # acknowledged only when the judging is stored
        "task_reject_on_worker_lost": True,  # a killed worker's task goes back to the queue
        "worker_prefetch_multiplier": 1,  # a worker holds only the task it runs
        "task_ignore_result": True,
        "worker_hijack_root_logger": False,
        "beat_schedule_filename": str(settings.data_dir / "celerybeat-schedule"),
    }


@cache
def producer() -> Celery:
    settings = get_settings()
    settings.ensure_dirs()
    app = Celery("memorace-api")
    app.conf.update(celery_config(settings))
    return app


def enqueue_judging(judging_id: int, priority: int = PRIORITY_FRESH) -> None:
    producer().send_task(JUDGE_TASK, args=[judging_id], priority=priority, queue=QUEUE)


def enqueue_helpers(judging_id: int, attempt: int, count: int, priority: int) -> None:
    """Ask `count` more worker slots to judge cases of this judging's attempt."""
    for _ in range(count):
        producer().send_task(CASES_TASK, args=[judging_id, attempt], priority=priority, queue=QUEUE)


def enqueue_rescore(version_id: int, actor_id: int | None) -> None:
    producer().send_task(RESCORE_TASK, args=[version_id, actor_id], queue=QUEUE)


def enqueue_import(job_id: int) -> None:
    producer().send_task(IMPORT_TASK, args=[job_id], priority=PRIORITY_FRESH, queue=QUEUE)


def queue_ready() -> bool:
    """Whether the broker answers (for /healthz)."""
    try:
        with producer().connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
        return True
    except Exception:
        return False


def messages_in_broker(task: str, taken_within_s: float = 0.0) -> set[int] | None:
    """The first argument (a judging or import job id) of every `task` message the broker
    holds: waiting in the queue, or (Redis) taken by a worker within the last
    `taken_within_s` seconds and not yet acknowledged (one about to start, or a retry
    waiting for its countdown). An older unacknowledged message is counted lost: its
    worker died (SIGKILL) and Redis would give it back only after the visibility
    timeout. None when the broker cannot be read."""
    settings = get_settings()
    try:
        if settings.broker_url.startswith("redis"):
            raws = _redis_messages(taken_within_s)
        elif settings.broker_url.startswith("filesystem"):
            raws = _file_messages(settings)
        else:
            return None
    except Exception:
        return None
    found = set()
    for raw in raws:
        with suppress(ValueError, KeyError, TypeError, IndexError):
            message = raw if isinstance(raw, dict) else json.loads(raw)
            if message["headers"].get("task") != task:
                continue
            body = message["body"]
            if message["properties"].get("body_encoding") == "base64":
                body = base64.b64decode(body)
            args = json.loads(body)[0]
            if args and isinstance(args[0], int):
                found.add(args[0])
    return found


def _redis_messages(taken_within_s: float) -> list[Any]:
    # The queue is one list per priority step (celery_config: sep ":", steps 0-9);
    # delivered, unacknowledged messages sit in kombu's `unacked` hash, indexed by time.
    with producer().connection_for_read() as conn:
        client = conn.default_channel.client
        keys = [QUEUE] + [f"{QUEUE}:{step}" for step in range(1, 10)]
        raws = [raw for key in keys for raw in client.lrange(key, 0, -1)]
        if taken_within_s > 0:
            tags = client.zrangebyscore("unacked_index", time.time() - taken_within_s, "+inf")
            for entry in client.hmget("unacked", tags) if tags else []:
                with suppress(ValueError, TypeError, IndexError):
                    raws.append(json.loads(entry)[0])
        return raws


def _file_messages(settings: Settings) -> list[Any]:
    # One file per waiting message, renamed away when a worker takes it
    # (api.filebroker): the files a worker would take, by the worker's own filter; a
    # taken message lives only in that worker's memory.
    raws: list[Any] = []
    for path in settings.queue_dir.iterdir():
        if filebroker.is_message_of(path.name, QUEUE):
            with suppress(OSError):
                raws.append(path.read_bytes())
    return raws
