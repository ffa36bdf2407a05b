"""The audit log: every admin action, who did it and what it changed."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.db.models import AuditEntry, User


def record(
    db: Session, actor: User | None, action: str, target: str, detail: dict[str, Any] | None = None
) -> None:
    db.add(
        AuditEntry(
            actor_id=actor.id if actor else None, action=action, target=target, detail=detail or {}
        )
    )


def entries(db: Session, limit: int = 200) -> list[dict[str, Any]]:
    rows = db.scalars(select(AuditEntry).order_by(AuditEntry.id.desc()).limit(limit)).all()
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
