"""The reaper runs inside Celery beat, on beat's clock, never as a queue message.

As a task it waited behind every queued judging: during a long backlog it never ran,
and when it finally did, it took the backlog for lost messages. Beat (one per
deployment: the `beat` service in compose, the `-B` process of `scripts/serve`'s
worker) now calls it in its own process; the broker carries only judgings and
imports, on either broker (Redis or the embedded file broker); each pass also collects
the builds of ended judgings (worker.build_blobs). Per-host housekeeping
(orphan sandboxes) runs in each worker's main process instead (worker.tasks).
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta
from typing import Any

from celery.beat import PersistentScheduler
from sqlalchemy import select

from api import news, queue
from api.actions import imports as api_imports
from api.db.models import JUDGING_UNDERWAY, Judging, aware, utcnow
from api.db.session import session_scope
from api.news import News
from api.settings import Settings, get_settings
from worker import build_blobs
from worker.results import add_line

log = logging.getLogger("memorace.reaper")


def run(settings: Settings) -> None:
    """One reaper pass; every pass says so in the log (the operator's proof that the
    reaper is alive, and the test's)."""
    started = time.monotonic()
    try:
        judgings = reap(settings)
        imports = api_imports.resend_lost(settings)
        builds = build_blobs.collect(settings)
    except Exception:
        log.exception("reaper run failed")
        return
    took = time.monotonic() - started
    log.info(
        "reaper ran in %.3f s: re-sent judgings %s, import jobs %s; %d builds collected",
        took, judgings, imports, builds,
        extra={"reaper_took_s": round(took, 3), "resent_judgings": judgings,
               "resent_imports": imports, "collected_builds": builds},
    )  # fmt: skip


class Scheduler(PersistentScheduler):
    """Beat's scheduler, except that the reaper's entry runs here instead of being sent."""

    def apply_entry(self, entry: Any, producer: Any = None) -> None:
        if entry.task == queue.REAP_TASK:
            run(get_settings())  # never raises: a failed pass is logged, the next one comes
        else:
            super().apply_entry(entry, producer=producer)


def reap(settings: Settings) -> list[int]:
    """Re-send judgings whose queue message is lost and re-queue those whose worker
    stopped answering (a dead worker). Returns the judging ids re-sent.

    Only what is lost is re-sent: a queued judging that waited requeue_after_s is
    re-sent only when the broker held no message for it at two passes in a row (a
    backlog alone re-sends nothing; a message a worker has just taken but not yet
    claimed is invisible on the embedded broker for a moment, never for a whole
    reap interval); a dead worker's judging is re-sent unless its message went back
    to the queue (Celery returns it when only the pool child died)."""
    # The broker is read before the rows: a message taken after this look is one a
    # worker holds unacknowledged, counted for requeue_after_s (api.queue).
    in_broker = queue.messages_in_broker(queue.JUDGE_TASK, settings.requeue_after_s)
    waiting = queue.messages_in_broker(queue.JUDGE_TASK) if in_broker is not None else None
    if in_broker is None:
        log.warning("reaper cannot read the broker: re-sending every judging queued too long")
    now = utcnow()
    resend: list[tuple[int, int]] = []
    missing: set[tuple[int, datetime]] = set()
    with session_scope(settings.database_url) as db:
        stale = now - timedelta(seconds=settings.requeue_after_s)
        dead = now - timedelta(seconds=settings.heartbeat_timeout_s)
        for j in db.scalars(select(Judging).where(Judging.status.in_(JUDGING_UNDERWAY))):
            if j.status == "queued":
                if aware(j.enqueued_at) >= stale or j.id in (in_broker or ()):
                    continue
                missing.add(key := (j.id, aware(j.enqueued_at)))
                if in_broker is not None and key not in _missing_last_pass:
                    continue
                j.reason = add_line(j.reason, f"{now:%H:%M:%S} re-sent: its queue message was lost")
            elif j.heartbeat_at is None or aware(j.heartbeat_at) < dead:
                j.reason = add_line(j.reason, f"{now:%H:%M:%S} worker {j.worker} stopped answering")
                j.status = "queued"
                j.submission.status = "queued"
                j.submission.status_detail = (
                    f"re-queued: the worker judging it ({j.worker}) stopped answering"
                )
                news.after_commit(db, News(j.submission_id, queue=True, team=j.submission.team_id))
                if j.id in (waiting or ()):
                    j.enqueued_at = now
                    continue
            else:
                continue
            j.enqueued_at = now
            resend.append((j.id, j.priority))
    _missing_last_pass.clear()
    _missing_last_pass.update(missing)
    for judging_id, priority in resend:
        try:
            queue.enqueue_judging(judging_id, priority)
        except Exception as exc:
            log.warning("reaper cannot enqueue judging %s: %s", judging_id, exc)
    return [j for j, _ in resend]


# (judging, enqueued_at) of the queued judgings whose message the reaper's last pass
# did not find in the broker (one reaper per deployment: beat's process).
_missing_last_pass: set[tuple[int, datetime]] = set()
