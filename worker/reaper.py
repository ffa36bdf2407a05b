"""The reaper runs inside Celery beat, on beat's clock, never as a queue message.

As a task it waited behind every queued judging: during a long backlog it never ran,
and when it finally did, it took the backlog for lost messages. Beat (one per
deployment: the `beat` service in compose, the `-B` process of `scripts/serve`'s
worker) now calls it in its own process; the broker carries only judgings and
imports, on either broker (Redis or the embedded file broker). Per-host housekeeping
(orphan sandboxes) runs in each worker's main process instead (worker.tasks).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from celery.beat import PersistentScheduler

from api import imports as api_imports
from api import queue
from api.settings import Settings, get_settings
from worker import judging

log = logging.getLogger("memorace.reaper")


def run(settings: Settings) -> None:
    """One reaper pass; every pass says so in the log (the operator's proof that the
    reaper is alive, and the test's)."""
    started = time.monotonic()
    try:
        judgings = judging.reap(settings)
        imports = api_imports.resend_lost(settings)
    except Exception:
        log.exception("reaper run failed")
        return
    took = time.monotonic() - started
    log.info(
        "reaper ran in %.3f s: re-sent judgings %s, import jobs %s", took, judgings, imports,
        extra={"reaper_took_s": round(took, 3), "resent_judgings": judgings,
               "resent_imports": imports},
    )  # fmt: skip


class Scheduler(PersistentScheduler):
    """Beat's scheduler, except that the reaper's entry runs here instead of being sent."""

    def apply_entry(self, entry: Any, producer: Any = None) -> None:
        if entry.task == queue.REAP_TASK:
            run(get_settings())  # never raises: a failed pass is logged, the next one comes
        else:
            super().apply_entry(entry, producer=producer)
