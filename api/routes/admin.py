"""The organizers' API under /api/v1/admin; every action lands in the audit log."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import AfterValidator, BaseModel, Field, field_validator

from api import queue
from api.access.auth import expiry, iso, utc
from api.access.deps import DB, Admin, Config, ContestRef, Id
from api.access.uploads import form_schema
from api.actions import admin, audit, baselines, contests, finals, imports, messages, problems
from api.actions.audit import record
from api.errors import ServiceError

router = APIRouter(prefix="/api/v1/admin", tags=["admin"])


def _utc_or_none(stamp: datetime | None) -> datetime | None:
    return utc(stamp) if stamp else None


# A moment in UTC: "...+02:00" is converted, a time without offset is read as UTC.
UtcStamp = Annotated[datetime | None, AfterValidator(_utc_or_none)]


class Body(BaseModel):
    """No text of a request holds a NUL character: PostgreSQL refuses it (a 500)."""

    @field_validator("*")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        if isinstance(value, str) and "\x00" in value:
            raise ValueError("must not hold a NUL character")
        return value


class TeamIn(Body):
    name: str


class UserIn(Body):
    username: str
    password: str = ""
    team: str | None = None
    admin: bool = False


class TokenIn(Body):
    username: str
    name: str = ""
    # Optional expiry (api.access.auth.expiry): in days from now, or a moment.
    expires_in_days: float | None = Field(default=None, gt=0, le=3660)
    expires_at: UtcStamp = None


class RejudgeIn(Body):
    submission_id: int | None = None
    team: str | None = None
    problem: str | None = None


class DisqualifyIn(Body):
    submission_id: int | None = None
    team: str | None = None
    reason: str = ""


class WeightIn(BaseModel):
    weight: float = Field(ge=0, le=1e6)


class ContestIn(Body):
    title: str | None = None
    start_at: UtcStamp = None
    end_at: UtcStamp = None
    freeze_at: UtcStamp = None
    hidden_revealed: bool | None = None
    # What contestants see of a hidden case before the reveal (api.actions.submissions).
    hidden_detail: Literal["verdict", "judged"] | None = None
    # Whether the reference planners show as baselines on the boards (api.actions.baselines).
    baselines: bool | None = None
    # When hidden cases run: with every submission, or in the final judging (api.actions.finals).
    hidden_judging: Literal["submission", "final"] | None = None
    final_picks: int | None = Field(default=None, ge=1, le=finals.MAX_PICKS)  # a team's picks
    # Who makes accounts (api.access.signup) and how many members a team may have.
    signup: Literal["closed", "open", "approval"] | None = None
    team_size: int | None = Field(default=None, ge=1, le=admin.MAX_TEAM_SIZE)


class AnswerIn(Body):
    answer: str = Field(max_length=messages.MAX_TEXT * 2)
    audience: Literal["team", "all"] = "team"  # the asking team alone, or everyone


class AnnouncementIn(Body):
    text: str = Field(max_length=messages.MAX_TEXT * 2)
    problem: str = Field(default="", max_length=64)


PACKAGE_FORM = form_schema("a problem package as .zip or .tar.gz", {})


@router.post("/problems", status_code=202, openapi_extra=PACKAGE_FORM)
async def import_problem(request: Request, user: Admin, db: DB, settings: Config) -> JSONResponse:
    """Store the package and queue its import: 202 with the job to follow (GET its url)."""
    upload = await imports.receive(request, settings)
    try:
        job = await run_in_threadpool(imports.create_job, db, settings, user, upload)
        await run_in_threadpool(db.commit)
    except BaseException:
        imports.discard(settings, upload)
        raise
    await run_in_threadpool(imports.send, db, job)
    body = await run_in_threadpool(imports.job_dict, db, job)
    return JSONResponse(body, status_code=202, headers={"Location": body["url"]})


@router.get("/imports")
def list_imports(user: Admin, db: DB, limit: int = 20) -> list[dict[str, Any]]:
    return [imports.job_dict(db, j) for j in imports.recent_jobs(db, min(max(limit, 1), 200))]


@router.get("/imports/{job_id}")
def get_import(job_id: Id, user: Admin, db: DB) -> dict[str, Any]:
    return imports.job_dict(db, imports.get_job(db, job_id))


@router.patch("/problems/{slug}/cases/{case}")
def set_weight(slug: str, case: str, body: WeightIn, user: Admin, db: DB) -> dict[str, Any]:
    row = problems.set_case_weight(db, slug, case, body.weight, user)
    return {
        "case": row.name,
        "weight": row.weight,
        "rescore_needed": True,
        "message": f"rescore '{slug}' to apply the new weight to judged submissions",
    }


@router.post("/teams", status_code=201)
def create_team(body: TeamIn, user: Admin, db: DB) -> dict[str, Any]:
    team = admin.create_team(db, body.name, user)
    return {"id": team.id, "name": team.name}


@router.post("/users", status_code=201)
def create_user(body: UserIn, user: Admin, db: DB) -> dict[str, Any]:
    new = admin.create_user(db, body.username, body.password, body.team, body.admin, user)
    return {"id": new.id, "username": new.username, "team": body.team, "admin": new.is_admin}


@router.post("/tokens", status_code=201)
def create_token(body: TokenIn, user: Admin, db: DB) -> dict[str, Any]:
    until = expiry(body.expires_in_days, body.expires_at)
    token = admin.issue_token(db, body.username, body.name, user, until)
    return {"username": body.username, "token": token, "expires_at": iso(until)}


@router.post("/rejudge", status_code=202)
def rejudge(body: RejudgeIn, user: Admin, db: DB) -> dict[str, Any]:
    ids = admin.rejudge(db, user, body.submission_id, body.team, body.problem)
    db.commit()
    sent = admin.send_rejudges(ids)
    note = "" if sent else "the queue is unreachable; the reaper will send them when it is back"
    return {"judgings": ids, "note": note}


@router.post("/problems/{slug}/rescore", status_code=202)
def rescore(slug: str, user: Admin, db: DB) -> dict[str, Any]:
    version = problems.current_version(db, slug)
    record(db, user, "rescore", slug, {"version": version.number})
    try:  # before the commit: if the queue is down, no audit entry claims a rescore
        queue.enqueue_rescore(version.id, user.id)
    except Exception as exc:
        raise ServiceError(f"the queue is unreachable, nothing was rescored: {exc}", 503) from exc
    return {"problem": slug, "version": version.number, "queued": True}


@router.post("/disqualify")
def disqualify(body: DisqualifyIn, user: Admin, db: DB) -> dict[str, Any]:
    admin.disqualify(db, user, body.submission_id, body.team, body.reason)
    return {"ok": True}


@router.get("/contest")
def get_contest(user: Admin, db: DB, contest: ContestRef = None) -> dict[str, Any]:
    """The contest's settings (`contest`: a slug or id; absent, the current contest)."""
    return admin.contest_dict(contests.resolve(db, user, contest))


@router.put("/contest")
def put_contest(
    body: ContestIn, user: Admin, db: DB, settings: Config, contest: ContestRef = None
) -> dict[str, Any]:
    changes = body.model_dump(exclude_unset=True)
    row = contests.resolve(db, user, contest)
    answer = admin.contest_dict(admin.update_contest(db, user, changes, row))
    if changes.get("hidden_revealed") and (sharing := contests.unrevealed_sharing(db, row)):
        answer["warning"] = reveal_warning(sharing)
    db.commit()
    baselines.catch_up(settings)  # the reveal and the switch queue baseline judgings
    return answer


def reveal_warning(sharing: list[str]) -> str:
    return (f"contest(s) {', '.join(sharing)} use the same problem versions and are not "
            "revealed: their hidden cases' figures now show on this contest's boards")  # fmt: skip


@router.get("/audit")
def get_audit(user: Admin, db: DB, limit: int = 200) -> list[dict[str, Any]]:
    return audit.entries(db, min(max(limit, 1), 1000))


@router.get("/clarifications")
def all_clarifications(user: Admin, db: DB, contest: ContestRef = None) -> list[dict[str, Any]]:
    """Every team's questions (with the team's name) and their answers, newest first,
    in the contest (absent: the current one)."""
    return messages.visible(db, user, "clarification", contest=contests.resolve(db, user, contest))


@router.post("/clarifications/{message_id}/answer")
def answer_clarification(message_id: Id, body: AnswerIn, user: Admin, db: DB) -> dict[str, Any]:
    return messages.answer(db, user, message_id, body.answer, body.audience)


@router.post("/announcements", status_code=201)
def announce(
    body: AnnouncementIn, user: Admin, db: DB, contest: ContestRef = None
) -> dict[str, Any]:
    """To every team of the contest (absent: the current one)."""
    chosen = contests.resolve(db, user, contest)
    return messages.announce(db, user, body.text, body.problem, chosen)
