"""Which workers are alive, read from the presence rows they keep fresh (worker.presence):
for /healthz, the admin pages, the metrics and the answer to a submission."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.db.models import WorkerRow, aware, utcnow
from api.settings import Settings

NO_WORKER = "no worker is alive: submissions wait until one starts"
UNISOLATED_WORKERS = (
    "a worker judges with the local sandbox UNISOLATED (MEMORACE_ALLOW_UNISOLATED=1): "
    "development only, its planners can read every world-readable file of its host"
)
QUEUED_NO_WORKER = "queued: no worker is running now; it will be judged when one starts"


@dataclass(frozen=True)
class WorkerView:
    row: WorkerRow
    state: str  # alive | stopping | dead (no beat for heartbeat_timeout_s) | stopped
    age_s: float  # since the last beat

    @property
    def busy(self) -> bool:
        return bool(self.row.current_task)


def state_of(row: WorkerRow, now: datetime, settings: Settings) -> str:
    if row.state == "stopped":
        return "stopped"
    if now - aware(row.last_seen) > timedelta(seconds=settings.heartbeat_timeout_s):
        return "dead"
    return "stopping" if row.state == "stopping" else "alive"


def all_workers(db: Session, settings: Settings) -> list[WorkerView]:
    now = utcnow()
    rows = db.scalars(select(WorkerRow).order_by(WorkerRow.name))
    return [
        WorkerView(r, state_of(r, now, settings), (now - aware(r.last_seen)).total_seconds())
        for r in rows
    ]


def alive_count(db: Session, settings: Settings) -> int:
    return sum(1 for w in all_workers(db, settings) if w.state == "alive")


def health(db: Session, settings: Settings, names: bool) -> dict[str, Any]:
    """For /healthz: counts for anyone; with `names` (an organizer) the list too: name,
    state, busy or idle, last beat, sandbox; no pids or ids. A stopped worker is not listed; a
    dead one is, until its row is pruned (a day)."""
    shown = [w for w in all_workers(db, settings) if w.state != "stopped"]
    alive = [w for w in shown if w.state == "alive"]
    busy = sum(1 for w in alive if w.busy)
    counts = {
        "alive": len(alive),
        "busy": busy,
        "idle": len(alive) - busy,
        "heartbeat_s": settings.worker_heartbeat_s,
    }
    if not names:
        return counts
    if any("UNISOLATED" in w.row.sandbox for w in alive):
        counts["warning"] = UNISOLATED_WORKERS
    return counts | {
        "list": [
            {
                "name": w.row.name,
                "state": w.state,
                "busy": w.busy,
                "last_seen": aware(w.row.last_seen).isoformat(),
                "seconds_ago": round(w.age_s, 1),
                "sandbox": w.row.sandbox,  # "local UNISOLATED": development mode
            }
            for w in shown
        ],
    }
