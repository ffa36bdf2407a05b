"""The leaderboard of a problem: each team's best judged submission on its current version.

While the contest runs teams rank by public score. Once an admin reveals the
hidden scores, the same submissions (each team's best public one) rank by
their hidden score. After the freeze, other teams' newer submissions stay off
the board for contestants (admins see everything).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.db.models import Contest, Submission, Team, User, aware
from api.problems import current_version
from api.submissions import hidden_visible


def leaderboard(db: Session, slug: str, viewer: User | None) -> dict[str, Any]:
    version = current_version(db, slug)
    contest = db.get(Contest, 1)
    admin = bool(viewer and viewer.is_admin)
    revealed = hidden_visible(db, viewer)  # the same rule as a submission's hidden cases
    freeze = contest.freeze_at if contest and contest.freeze_at else None
    query = (
        select(Submission)
        .join(Team, Team.id == Submission.team_id)
        .where(
            Submission.version_id == version.id,
            Submission.status == "done",
            Submission.public_score.is_not(None),
            Submission.disqualified.is_(False),
            Team.disqualified.is_(False),
        )
    )
    best: dict[int, Submission] = {}
    for sub in db.scalars(query):
        own = viewer is not None and viewer.team_id == sub.team_id
        if freeze and not admin and not own and aware(sub.created_at) >= aware(freeze):
            continue
        seen = best.get(sub.team_id)
        if seen is None or (sub.public_score, -sub.id) > (seen.public_score, -seen.id):
            best[sub.team_id] = sub
    key = "hidden_score" if revealed and contest and contest.hidden_revealed else "public_score"
    rows = sorted(best.values(), key=lambda s: (-(getattr(s, key) or 0.0), s.id))
    return {
        "problem": slug,
        "version": version.number,
        "frozen": bool(freeze) and not admin,
        "hidden_revealed": bool(contest and contest.hidden_revealed),
        "ranked_by": key,
        "rows": [_row(i + 1, s, revealed) for i, s in enumerate(rows)],
    }


def _row(rank: int, sub: Submission, revealed: bool) -> dict[str, Any]:
    return {
        "rank": rank,
        "team": sub.team.name,
        "public_score": sub.public_score,
        "hidden_score": sub.hidden_score if revealed else None,
        "submission_id": sub.id,
        "submitted_at": aware(sub.created_at).isoformat(),
    }
