"""The audit log: every admin action, who did it and what it changed; and events that
come in floods (failed logins), tallied: one entry per source, its counts raised."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.db.models import AuditEntry, User, utcnow


def record(
    db: Session,
    actor: User | None,
    action: str,
    target: str,
    detail: dict[str, Any] | None = None,
    contest: int | None = None,
) -> None:
    """`contest`: the contest's id where the action is one contest's (its audit export)."""
    actor_id = actor.id if actor else None
    db.add(
        AuditEntry(
            actor_id=actor_id, action=action, target=target, detail=detail or {}, contest_id=contest
        )
    )


def tally(db: Session, action: str, target: str, counts: dict[str, int], new: bool) -> None:
    """Add `counts` to the newest `action` entry of `target`, or start one (`new`, or none
    yet): a flood of events is one entry with its counts, never one entry each. The
    caller serializes the calls for one target (it updated a row of its own first in
    this transaction: a lock held to its commit, on either database)."""
    now = utcnow().isoformat()
    entry = None
    if not new:
        entry = db.scalar(
            select(AuditEntry)
            .where(AuditEntry.action == action, AuditEntry.target == target)
            .order_by(AuditEntry.id.desc())
            .limit(1)
        )
    if entry is None:
        detail: dict[str, Any] = {**counts, "first_at": now, "last_at": now}
        db.add(AuditEntry(actor_id=None, action=action, target=target, detail=detail))
        return
    detail = dict(entry.detail or {})
    for key, add in counts.items():
        detail[key] = int(detail.get(key) or 0) + add
    entry.detail = {**detail, "last_at": now}  # a new dict: the JSON column sees the change


def entries(db: Session, limit: int = 200, contest: int | None = None) -> list[dict[str, Any]]:
    """The newest `limit` entries (`contest`: that contest's only)."""
    query = select(AuditEntry).order_by(AuditEntry.id.desc()).limit(limit)
    if contest is not None:
        query = query.where(AuditEntry.contest_id == contest)
    rows = db.scalars(query).all()
    return [
        {
            "id": e.id,
            "at": e.at.isoformat(),
            "actor": e.actor.username if e.actor else "system",
            "action": e.action,
            "target": e.target,
            "detail": e.detail,
        }
        for e in rows
    ]
