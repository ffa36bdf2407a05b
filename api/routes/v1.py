"""The contestants' REST API under /api/v1."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from api.access.caller import Caller
from api.access.deps import (
    DB,
    Config,
    Contestant,
    ContestantReader,
    ContestRef,
    Id,
    Reader,
    Viewer,
)
from api.access.uploads import form_schema, read_upload
from api.actions import contests, messages, problems, submissions
from api.errors import ServiceError
from api.live import events, message_feed
from api.reads import hidden, readcache
from api.reads.leaderboard import cached_leaderboard, known_board
from api.workers import QUEUED_NO_WORKER, alive_count

router = APIRouter(prefix="/api/v1", tags=["contestants"])
DEFAULT_PAGE = 50  # submissions a list page shows without `limit`


@router.get("/me")
def me(user: Contestant) -> dict[str, Any]:
    return {
        "username": user.username,
        "team": user.team.name if user.team else None,
        "admin": user.is_admin,
    }


@router.get("/contests")
def list_contests(db: DB, viewer: Viewer) -> list[dict[str, Any]]:
    """The contests you may see: your team's (organizers and visitors: every one)."""
    return [contests.summary(db, c) for c in contests.visible(db, viewer)]


@router.get("/problems")
def list_problems(db: DB, viewer: Viewer, contest: ContestRef = None) -> list[dict[str, Any]]:
    """The contest's problems (`contest`: a slug or id; absent, your contest)."""
    chosen = contests.open_for(db, viewer, contest)
    return [_problem_dict(v, full=False) for v in problems.all_current(db, chosen)]


@router.get("/problems/{slug}")
def get_problem(slug: str, db: DB, viewer: Viewer, contest: ContestRef = None) -> dict[str, Any]:
    chosen = contests.open_for(db, viewer, contest)
    shown = hidden.hidden_visible(db, viewer, chosen)
    return _problem_dict(problems.current_version(db, slug, chosen), full=True, hidden=shown)


@router.get("/problems/{slug}/statement", response_class=PlainTextResponse)
def get_statement(slug: str, db: DB, viewer: Viewer, contest: ContestRef = None) -> str:
    chosen = contests.open_for(db, viewer, contest)
    return problems.current_version(db, slug, chosen).statement


@router.get("/problems/{slug}/cases/{case}")
def download_case(
    slug: str, case: str, db: DB, settings: Config, viewer: Viewer, contest: ContestRef = None
) -> FileResponse:
    chosen = contests.open_for(db, viewer, contest)
    path = problems.public_case_path(db, settings, slug, case, chosen)
    return FileResponse(path, filename=path.name, media_type="text/csv")


def _problem_dict(version: Any, full: bool, hidden: bool = False) -> dict[str, Any]:
    """`hidden`: whether the viewer may see the hidden cases' figures (organizers, or
    anyone after the reveal): their capacity (~1.25 x the bound), size and bound."""
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
        data["case_list"] = [_case_dict(c, hidden or c.split == "public") for c in version.cases]
    return data


def _case_dict(case: Any, figures: bool) -> dict[str, Any]:
    shown = {k: getattr(case, k) if figures else None for k in ("capacity", "lower_bound", "items")}
    return {"name": case.name, "split": case.split, "weight": case.weight, **shown}


# The form is read by the route itself (api.access.uploads), after the token is checked.
SUBMISSION_FORM = form_schema(
    "the planner: .py, .cpp, .zip or .tar.gz",
    {"problem": "problem slug", "contest": "a contest's slug or id (absent: yours)"},
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
        _contest_of(request, upload.fields.get("contest", "")),
    )
    await run_in_threadpool(db.commit)  # the rate limit's lock is held until here
    if not reused:
        await run_in_threadpool(submissions.send, db, sub)
    body = await run_in_threadpool(submissions.submission_dict, db, sub, user, reused)
    if body["status"] == "queued" and not await run_in_threadpool(alive_count, db, settings):
        body["warning"] = body["status_detail"] = QUEUED_NO_WORKER  # not waiting in silence
    return JSONResponse(body, status_code=200 if reused else 201)


@router.get("/submissions")
async def list_subs(
    caller: ContestantReader, db: DB, limit: int = DEFAULT_PAGE, before_id: BeforeId = None
) -> Response:
    """Newest first, `limit` (at most 200) a page; the next page: `before_id` = the
    last id shown (also sent as X-Next-Before-Id while more may follow). A team's page
    is kept for its other readers (api.reads.readcache): async, a kept one needs no thread."""
    size = page_size(limit)
    key, scope = list_key(readcache.database(db), caller, size, before_id)
    page = readcache.get(key) or await run_in_threadpool(
        readcache.cached_scoped, key, lambda: _submission_page(db, caller, size, before_id, scope)
    )
    return Response(page[0], media_type="application/json", headers=page[1])


def list_key(
    database: Any, caller: Caller, size: int, before_id: int | None
) -> tuple[tuple, readcache.Scope]:
    """A submission-list page's key in api.reads.readcache (also api.routes.hot_reads's),
    and its scope."""
    key = ("submissions", database, caller.team_id, caller.is_admin, size, before_id)
    return key, (readcache.LISTS, readcache.ADMIN if caller.is_admin else caller.team_id)


def _submission_page(
    db: Session, caller: Caller, size: int, before_id: int | None, scope: readcache.Scope
) -> tuple[tuple[bytes, dict[str, str]], readcache.Scope]:
    """((the JSON body, its headers), what it shows): encoded here, once for every
    reader of the page; a page with a queued submission shows queue positions."""
    user = caller.row(db)
    subs = submissions.list_submissions(db, user, size, before_id=before_id)
    more = {"X-Next-Before-Id": str(subs[-1].id)} if subs and len(subs) == size else {}
    body = submissions.submission_dicts(db, subs, user)
    if any(s["queue_position"] is not None or s["status"] == "queued" for s in body):
        scope = (readcache.QUEUED, scope[1])
    return (json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode(), more), scope


@router.get("/submissions/{sub_id}")
def get_sub(sub_id: Id, user: Contestant, db: DB) -> dict[str, Any]:
    return submissions.submission_dict(db, submissions.get_submission(db, sub_id, user), user)


@router.get("/submissions/{sub_id}/events")
async def follow(
    sub_id: Id, user: ContestantReader, settings: Config, request: Request
) -> Response:
    """Live events until the judging ends; 429 with Retry-After past the stream caps."""
    return await events.open_stream(request, settings, sub_id, user)


@router.get("/leaderboard/{slug}")
async def get_leaderboard(
    slug: str, db: DB, viewer: Reader, request: Request, contest: ContestRef = None
) -> Response:
    """With an ETag: `If-None-Match` with the last one is 304 until the board changes.
    async: a board in this process's caches needs no database session (api.reads.readcache)."""
    board = None if contest else known_board(db, slug, viewer)
    board = board or await run_in_threadpool(_board, db, slug, viewer, contest)
    headers = {"ETag": board.etag, "Cache-Control": "private, no-cache"}
    if board.etag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    return Response(board.encoded, media_type="application/json", headers=headers)


def _contest_of(request: Request, field: str) -> str | None:
    """A write's contest: its form or body field, else `?contest=` (the CLI sends it)."""
    return (field.strip() or request.query_params.get("contest", "").strip())[:64] or None


def _board(db: Session, slug: str, viewer: Caller | None, contest: str | None) -> Any:
    return cached_leaderboard(db, slug, viewer, contests.open_for(db, viewer, contest))


# The submission list's page: newest first, a cursor (the last id seen) for the next.
BeforeId = Annotated[int | None, Query(ge=1, le=2**31 - 1)]


def page_size(limit: int) -> int:
    return min(max(limit, 1), 200)


def check_form_problem(slug: str) -> str:
    """The web form and the API say the same thing about a missing problem."""
    if not slug.strip():
        raise ServiceError("say which problem: the form field 'problem' is empty")
    return slug.strip()


class QuestionIn(BaseModel):
    question: str = Field(max_length=messages.MAX_TEXT * 2)
    problem: str = Field(default="", max_length=64)  # a slug; "": a general question
    contest: str = Field(default="", max_length=64)  # a slug or id; "": yours


@router.post("/clarifications", status_code=201)
def ask_jury(body: QuestionIn, user: Contestant, db: DB, request: Request) -> dict[str, Any]:
    """Ask the jury about a problem or in general; only your team sees the question
    unless the jury answers it to everyone."""
    chosen = contests.resolve(db, user, _contest_of(request, _no_nul(body.contest)))
    return messages.ask(db, user, _no_nul(body.question), _no_nul(body.problem), chosen)


@router.get("/clarifications")
def list_clarifications(
    user: Contestant, db: DB, contest: ContestRef = None
) -> list[dict[str, Any]]:
    """Your team's questions and the ones answered to everyone, newest first, in the
    contest (absent: yours)."""
    return messages.visible(db, user, "clarification", contest=contests.resolve(db, user, contest))


@router.get("/announcements")
def list_announcements(
    user: Contestant, db: DB, contest: ContestRef = None
) -> list[dict[str, Any]]:
    return messages.visible(db, user, "announcement", contest=contests.resolve(db, user, contest))


@router.get("/contest/events")
async def contest_events(user: ContestantReader, settings: Config, request: Request) -> Response:
    """Live: a `message` event for each question, answer or announcement you may read,
    as it is committed (the data as GET /clarifications shows it); 429 with Retry-After
    past the stream caps."""
    return await message_feed.open_stream(request, settings, user)


def _no_nul(text: str) -> str:
    if "\x00" in text:
        raise ServiceError("text must not hold a NUL character")
    return text
