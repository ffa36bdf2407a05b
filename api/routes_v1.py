"""The contestants' REST API under /api/v1."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse, StreamingResponse

from api import problems, submissions
from api.db.models import User
from api.db.session import session_scope
from api.deps import DB, Config, Contestant, Id, Viewer
from api.errors import ServiceError
from api.leaderboard import leaderboard
from api.settings import Settings
from api.uploads import form_schema, read_upload
from api.workers import QUEUED_NO_WORKER, alive_count

router = APIRouter(prefix="/api/v1", tags=["contestants"])
SSE_POLL_S = 0.5
SSE_KEEPALIVE_S = 15.0


@router.get("/me")
def me(user: Contestant) -> dict[str, Any]:
    return {
        "username": user.username,
        "team": user.team.name if user.team else None,
        "admin": user.is_admin,
    }


@router.get("/problems")
def list_problems(db: DB) -> list[dict[str, Any]]:
    return [_problem_dict(v, full=False) for v in problems.all_current(db)]


@router.get("/problems/{slug}")
def get_problem(slug: str, db: DB) -> dict[str, Any]:
    return _problem_dict(problems.current_version(db, slug), full=True)


@router.get("/problems/{slug}/statement", response_class=PlainTextResponse)
def get_statement(slug: str, db: DB) -> str:
    return problems.current_version(db, slug).statement


@router.get("/problems/{slug}/cases/{case}")
def download_case(slug: str, case: str, db: DB) -> FileResponse:
    path = problems.public_case_path(db, slug, case)
    return FileResponse(path, filename=path.name, media_type="text/csv")


def _problem_dict(version: Any, full: bool) -> dict[str, Any]:
    data = {
        "slug": version.problem.slug,
        "name": version.name,
        "type": version.type,
        "version": version.number,
        "time_limit_s": version.time_limit_s,
        "cases": len(version.cases),
    }
    if full:
        data["statement"] = version.statement
        data["case_list"] = [
            {
                "name": c.name,
                "split": c.split,
                "weight": c.weight,
                "capacity": c.capacity,
                "lower_bound": c.lower_bound if c.split == "public" else None,
                "items": c.items,
            }
            for c in version.cases
        ]
    return data


# The form is read by the route itself (api.uploads), after the token is checked.
SUBMISSION_FORM = form_schema(
    "the planner: .py, .cpp, .zip or .tar.gz", {"problem": "problem slug"}
)


@router.post("/submissions", status_code=201, openapi_extra=SUBMISSION_FORM)
async def submit(request: Request, user: Contestant, db: DB, settings: Config) -> JSONResponse:
    upload = await read_upload(request, settings.upload_limit_bytes)
    if not upload.filename:
        raise ServiceError("the form field 'file' is missing: send the planner file", 422)
    sub, reused = await run_in_threadpool(
        submissions.create_submission,
        db,
        settings,
        user,
        check_form_problem(upload.fields.get("problem", "")),
        upload.filename,
        upload.data,
    )
    await run_in_threadpool(db.commit)  # the rate limit's lock is held until here
    if not reused:
        await run_in_threadpool(submissions.send, db, sub)
    body = await run_in_threadpool(submissions.submission_dict, db, sub, user, reused)
    if body["status"] == "queued" and not await run_in_threadpool(alive_count, db, settings):
        body["warning"] = body["status_detail"] = QUEUED_NO_WORKER  # not waiting in silence
    return JSONResponse(body, status_code=200 if reused else 201)


@router.get("/submissions")
def list_subs(user: Contestant, db: DB, limit: int = 100) -> list[dict[str, Any]]:
    subs = submissions.list_submissions(db, user, min(max(limit, 1), 500))
    return [submissions.submission_dict(db, s, user) for s in subs]


@router.get("/submissions/{sub_id}")
def get_sub(sub_id: Id, user: Contestant, db: DB) -> dict[str, Any]:
    return submissions.submission_dict(db, submissions.get_submission(db, sub_id, user), user)


@router.get("/submissions/{sub_id}/events")
def follow(
    sub_id: Id, user: Contestant, db: DB, settings: Config, request: Request
) -> StreamingResponse:
    submissions.get_submission(db, sub_id, user)  # 404 before the stream starts
    stream = _events(settings, sub_id, user.id, request)
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(stream, media_type="text/event-stream", headers=headers)


async def _events(
    settings: Settings, sub_id: int, user_id: int, request: Request
) -> AsyncIterator[str]:
    """Server-sent events from the database (the source of truth), so they work the same
    with any broker: `status` on each change, `case` per new result, `end` when done."""
    sent_cases: set[tuple[int | None, str]] = set()
    last_status: Any = None
    quiet = 0.0
    while not await request.is_disconnected():
        body = await run_in_threadpool(_snapshot, settings, sub_id, user_id)
        out = []
        status = {
            k: body[k]
            for k in ("status", "status_detail", "queue_position", "cases_done", "cases_total")
        }
        if status != last_status:
            out.append(_sse("status", status))
            last_status = status
        for result in body["results"]:
            key = (body["judging_id"], result["case"])
            if key not in sent_cases:
                sent_cases.add(key)
                out.append(
                    _sse(
                        "case",
                        {
                            **result,
                            "cases_done": body["cases_done"],
                            "cases_total": body["cases_total"],
                        },
                    )
                )
        if body["status"] in ("done", "error"):
            out.append(_sse("end", body))
            yield "".join(out)
            return
        if out:
            quiet = 0.0
            yield "".join(out)
        elif quiet >= SSE_KEEPALIVE_S:
            quiet = 0.0
            yield ": keep-alive\n\n"
        await asyncio.sleep(SSE_POLL_S)
        quiet += SSE_POLL_S


def _snapshot(settings: Settings, sub_id: int, user_id: int) -> dict[str, Any]:
    with session_scope(settings.database_url) as db:
        user = db.get(User, user_id)
        assert user is not None
        return submissions.submission_dict(db, submissions.get_submission(db, sub_id, user), user)


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


@router.get("/leaderboard/{slug}")
def get_leaderboard(slug: str, db: DB, viewer: Viewer) -> dict[str, Any]:
    return leaderboard(db, slug, viewer)


def check_form_problem(slug: str) -> str:
    """The web form and the API say the same thing about a missing problem."""
    if not slug.strip():
        raise ServiceError("say which problem: the form field 'problem' is empty")
    return slug.strip()
