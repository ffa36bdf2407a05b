"""Pages for organizers: the contest window and final judging, judging (rejudge,
disqualify) and the audit log; problems and accounts are in organizer_problems.py
and organizer_accounts.py."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Annotated, Any

from fastapi import Form, Request
from fastapi.responses import Response
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from api.access.deps import DB, Admin
from api.actions import admin, audit, contests, finals, problems
from api.actions import baselines as reference
from api.db.models import Submission, Team, User
from api.errors import ServiceError
from api.pages.common import _safe_next, done, log, page_contest, render, router
from api.routes.admin import reveal_warning
from api.workers import all_workers


def _admin_home(
    request: Request, db: Session, user: User, status: int = 200, error: str = ""
) -> Response:
    return render(
        request,
        "admin/index.html",
        user,
        status,
        contest=admin.contest_dict(page_contest(request, db, user)),
        counts=_counts(db),
        workers=all_workers(db, request.app.state.settings),
        beats=request.app.state.settings,
        error=error or None,
    )


def _counts(db: Session) -> dict[str, int]:
    def count(column: Any, *where: Any) -> int:
        return int(db.scalar(select(func.count(column)).where(*where)) or 0)

    return {
        "problems": len(problems.all_current(db)),
        "teams": count(Team.id),
        "users": count(User.id),
        "submissions": count(Submission.id),
        "waiting": count(Submission.id, Submission.status.in_(("queued", "running"))),
    }


@router.get("/admin")
def admin_home(request: Request, user: Admin, db: DB) -> Response:
    return _admin_home(request, db, user)


def _stamp(field: str, value: str) -> datetime | None:
    """A datetime-local field (no offset), read as UTC; an offset is converted to UTC
    (SQLite stores the clock time only); empty clears it."""
    if not value.strip():
        return None
    try:
        stamp = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ServiceError(f"{field}: '{value}' is not a date and time") from None
    return stamp.astimezone(UTC) if stamp.tzinfo else stamp.replace(tzinfo=UTC)


@router.post("/admin/contest")
def admin_contest(
    request: Request,
    user: Admin,
    db: DB,
    title: Annotated[str, Form()] = "MemoRace",
    start_at: Annotated[str, Form()] = "",
    end_at: Annotated[str, Form()] = "",
    freeze_at: Annotated[str, Form()] = "",
    hidden_revealed: Annotated[str, Form()] = "",
    hidden_detail: Annotated[str, Form()] = "",
    baselines: Annotated[str, Form()] = "",
    hidden_judging: Annotated[str, Form()] = "",
    final_picks: Annotated[str, Form()] = "",
    signup: Annotated[str, Form()] = "",
    team_size: Annotated[str, Form()] = "",
    contest: Annotated[str, Form()] = "",
) -> Response:
    def act() -> str:
        row = contests.resolve(db, user, contest.strip() or None)
        changes = {
            "title": title.strip() or "MemoRace",
            "start_at": _stamp("start", start_at),
            "end_at": _stamp("end", end_at),
            "freeze_at": _stamp("freeze", freeze_at),
            "hidden_revealed": bool(hidden_revealed),
        }
        if hidden_detail:  # a form without the field keeps the setting
            changes["hidden_detail"] = hidden_detail
        if baselines:  # "shown" | "hidden"; likewise
            changes["baselines"] = baselines_switch(baselines)
        if hidden_judging:  # likewise
            changes["hidden_judging"] = hidden_judging
        if final_picks:
            changes["final_picks"] = _whole(final_picks, "final_picks")
        if signup:
            changes["signup"] = signup
        if team_size:
            changes["team_size"] = _whole(team_size, "team_size")
        admin.update_contest(db, user, changes, row)
        sharing = contests.unrevealed_sharing(db, row) if row.hidden_revealed else []
        warned = f"; careful: {reveal_warning(sharing)}" if sharing else ""
        return f"settings of contest '{row.slug}' saved{warned}"

    answer = _act(request, db, "/admin", act, partial(_admin_home, request, db, user))
    reference.catch_up(request.app.state.settings)  # the reveal, the switch: judgings
    return answer


def _whole(value: str, name: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ServiceError(f"{name} is a whole number", 422) from None


@router.post("/admin/final-judging")
def admin_final_judging(
    request: Request, user: Admin, db: DB, contest: Annotated[str, Form()] = ""
) -> Response:
    """The form's button: the final judging of every problem of the contest (api.actions.finals)."""
    queued: list[int] = []

    def act() -> str:
        queued.extend(finals.start(db, user, None, contests.resolve(db, user, contest or None)))
        return f"final judging started: {len(queued)} judgings queued"

    answer = _act(request, db, "/admin", act, partial(_admin_home, request, db, user))
    admin.send_rejudges(queued)  # committed by _act; the reaper re-sends what fails here
    return answer


def baselines_switch(value: str) -> bool:
    if value not in ("shown", "hidden"):
        raise ServiceError(f"baselines must be shown or hidden, not {value!r}", 422)
    return value == "shown"


def _act(
    request: Request,
    db: Session,
    back: str,
    action: Callable[[], str],
    on_error: Callable[[int, str], Response],
) -> Response:
    """Run an organizer action: commit and report it, or show the form again with the
    service's message and status (the transaction rolled back)."""
    try:
        message = action()
    except ServiceError as exc:
        db.rollback()
        return on_error(exc.status, exc.message)
    db.commit()
    return done(request, back, message)


# --- admin: rejudge, disqualify, audit ----------------------------------------------------


def _admin_judging(
    request: Request, db: Session, user: User, status: int = 200, error: str = ""
) -> Response:
    return render(
        request,
        "admin/judging.html",
        user,
        status,
        problems=problems.all_current(db),
        teams=list(db.scalars(select(Team).order_by(Team.name))),
        error=error or None,
    )


@router.get("/admin/judging")
def admin_judging(request: Request, user: Admin, db: DB) -> Response:
    return _admin_judging(request, db, user)


def _sub_id(text: str) -> int | None:
    text = text.strip().lstrip("#")
    if not text:
        return None
    if not (text.isascii() and text.isdigit()) or len(text) > 10:
        raise ServiceError(f"'{text[:20]}' is not a submission number")
    return int(text)


@router.post("/admin/rejudge")
def admin_rejudge(
    request: Request,
    user: Admin,
    db: DB,
    submission_id: Annotated[str, Form()] = "",
    team: Annotated[str, Form()] = "",
    problem: Annotated[str, Form()] = "",
    back: Annotated[str, Form()] = "/admin/judging",
) -> Response:
    """As POST /api/v1/admin/rejudge: queue new judgings, commit, then send them."""
    try:
        ids = admin.rejudge(db, user, _sub_id(submission_id), team or None, problem or None)
    except ServiceError as exc:
        db.rollback()
        return _admin_judging(request, db, user, exc.status, exc.message)
    db.commit()
    try:
        admin.send_rejudges(ids)
    except Exception as exc:  # the rows are safe: the reaper re-sends queued judgings
        log.warning("cannot enqueue rejudges %s: %s", ids, exc)
        return done(request, _safe_next(back), f"{len(ids)} rejudge(s) stored; queue: {exc}")
    return done(request, _safe_next(back), f"{len(ids)} rejudge(s) queued")


@router.post("/admin/disqualify")
def admin_disqualify(
    request: Request,
    user: Admin,
    db: DB,
    submission_id: Annotated[str, Form()] = "",
    team: Annotated[str, Form()] = "",
    reason: Annotated[str, Form()] = "",
    back: Annotated[str, Form()] = "/admin/judging",
) -> Response:
    def act() -> str:
        sub_id = _sub_id(submission_id)
        admin.disqualify(db, user, sub_id, None if sub_id else team or None, reason.strip())
        return f"submission {sub_id} disqualified" if sub_id else f"team '{team}' disqualified"

    on_error = partial(_admin_judging, request, db, user)
    return _act(request, db, _safe_next(back), act, on_error)


@router.get("/admin/audit")
def admin_audit(request: Request, user: Admin, db: DB, limit: int = 200) -> Response:
    entries = audit.entries(db, min(max(limit, 1), 1000))
    return render(request, "admin/audit.html", user, entries=entries)
