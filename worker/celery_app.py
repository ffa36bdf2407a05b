"""The Celery app of the workers: configuration shared with the API's producer."""

from __future__ import annotations

from celery import Celery

from api.queue import REAP_TASK, celery_config
from api.settings import get_settings

settings = get_settings()
settings.ensure_dirs()
app = Celery("memorace", include=["worker.tasks"])
app.conf.update(celery_config(settings))
# Celery's consumer, except that a malformed task message cannot stop the worker.
app.conf.worker_consumer = "worker.consumer:Consumer"
# The reaper runs inside beat on this schedule, never behind judgings (worker.reaper).
app.conf.beat_scheduler = "worker.reaper:Scheduler"
app.conf.beat_schedule = {
    "reap-stuck-judgings": {"task": REAP_TASK, "schedule": settings.reap_interval_s},
}
