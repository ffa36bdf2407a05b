"""The final judging over HTTP (api.actions.finals): a team's picks, the organizer's start."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from api.access.deps import DB, Admin, Contestant, ContestRef
from api.actions import admin, contests, finals
from api.errors import Forbidden

router = APIRouter(prefix="/api/v1", tags=["final judging"])


class PicksIn(BaseModel):
    submissions: list[int] = Field(max_length=finals.MAX_PICKS)


class FinalIn(BaseModel):
    problem: str | None = Field(default=None, max_length=64)


@router.get("/problems/{slug}/final")
def get_picks(slug: str, user: Contestant, db: DB, contest: ContestRef = None) -> dict[str, Any]:
    """Which of your team's submissions the final judging takes (your picks, or else your
    best public one), how many you may pick and whether they are fixed yet."""
    if user.team is None:
        raise Forbidden("only a team's members have picks")
    return finals.view(db, user.team, slug, contests.open_for(db, user, contest))


@router.put("/problems/{slug}/final")
def put_picks(
    slug: str, body: PicksIn, user: Contestant, db: DB, contest: ContestRef = None
) -> dict[str, Any]:
    """Pick up to `picks_allowed` of your team's submissions for the final judging
    (replacing earlier picks; an empty list goes back to the best public one)."""
    chosen = contests.open_for(db, user, contest)
    return finals.choose(db, user, slug, body.submissions, chosen)


@router.post("/admin/final-judging", status_code=202, tags=["organizers"])
def start_final(body: FinalIn, user: Admin, db: DB, contest: ContestRef = None) -> dict[str, Any]:
    """Queue the final judging (every case) of each team's picks and of the baselines,
    on one problem or all, of the contest (absent: the current one); again later, only
    what is new is queued."""
    ids = finals.start(db, user, body.problem, contests.resolve(db, user, contest))
    db.commit()
    sent = admin.send_rejudges(ids)
    note = "" if sent else "the queue is unreachable; the reaper will send them when it is back"
    return {"judgings": ids, "count": len(ids), "note": note}
