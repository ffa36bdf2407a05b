"""Pages for organizers: the contest window, problems (import, weights, rescore),
accounts and tokens, judging (rejudge, disqualify) and the audit log."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Annotated, Any

from fastapi import Form, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from api import admin, audit, auth, finals, imports, problems, queue
from api import baselines as reference
from api.audit import record
from api.db.models import Submission, Team, User
from api.deps import DB, Admin, Config
from api.errors import ServiceError
from api.pages.common import (
    CSRF_FIELD,
    _safe_next,
    check_csrf,
    done,
    log,
    render,
    router,
)
from api.routes_tokens import revoke_all, revoke_one
from api.settings import Settings
from api.workers import all_workers


def _admin_home(
    request: Request, db: Session, user: User, status: int = 200, error: str = ""
) -> Response:
    return render(
        request,
        "admin/index.html",
        user,
        status,
        contest=admin.contest_dict(admin.contest(db)),
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
) -> Response:
    def act() -> str:
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
        admin.update_contest(db, user, changes)
        return "contest settings saved"

    answer = _act(request, db, "/admin", act, partial(_admin_home, request, db, user))
    reference.catch_up(request.app.state.settings)  # the reveal, the switch: judgings
    return answer


def _whole(value: str, name: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ServiceError(f"{name} is a whole number", 422) from None


@router.post("/admin/final-judging")
def admin_final_judging(request: Request, user: Admin, db: DB) -> Response:
    """The form's button: the final judging of every problem (api.finals)."""
    queued: list[int] = []

    def act() -> str:
        queued.extend(finals.start(db, user, None))
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


# --- admin: problems ----------------------------------------------------------------------


def _admin_problems(
    request: Request, db: Session, user: User, status: int = 200, error: str = ""
) -> Response:
    return render(
        request,
        "admin/problems.html",
        user,
        status,
        problems=problems.all_current(db),
        jobs=[imports.job_dict(db, j) for j in imports.recent_jobs(db)],
        error=error or None,
    )


@router.get("/admin/problems")
def admin_problems(request: Request, user: Admin, db: DB) -> Response:
    return _admin_problems(request, db, user)


@router.post("/admin/problems")
async def admin_import(request: Request, user: Admin, db: DB, settings: Config) -> Response:
    """As POST /api/v1/admin/problems: the package is stored and a worker imports it;
    this page lists the import jobs."""
    try:
        upload = await imports.receive(request, settings)
    except ServiceError as exc:
        return await run_in_threadpool(_admin_problems, request, db, user, exc.status, exc.message)
    try:
        check_csrf(request, upload.fields.get(CSRF_FIELD))
        return await run_in_threadpool(_import, request, db, settings, user, upload)
    except BaseException:
        imports.discard(settings, upload)
        raise


def _import(request: Request, db: Session, settings: Settings, user: User, upload: Any) -> Response:
    job = imports.create_job(db, settings, user, upload)
    db.commit()
    try:
        imports.send(db, job)
    except ServiceError as exc:
        return _admin_problems(request, db, user, exc.status, exc.message)
    return done(request, "/admin/problems", f"import job {job.id} queued: its status is below")


@router.post("/admin/problems/{slug}/rescore")
def admin_rescore(slug: str, request: Request, user: Admin, db: DB) -> Response:
    """As POST /api/v1/admin/problems/{slug}/rescore: audit, commit, then queue."""
    version = problems.current_version(db, slug)
    record(db, user, "rescore", slug, {"version": version.number})
    db.commit()
    try:
        queue.enqueue_rescore(version.id, user.id)
    except Exception as exc:
        log.warning("cannot enqueue the rescore of %s: %s", slug, exc)
        return done(request, "/admin/problems", f"the queue is unreachable: {exc}", "error")
    return done(request, "/admin/problems", f"rescore of '{slug}' v{version.number} queued")


def _admin_problem(
    request: Request, db: Session, user: User, slug: str, status: int = 200, error: str = ""
) -> Response:
    version = problems.current_version(db, slug)
    return render(request, "admin/problem.html", user, status, version=version, error=error or None)


@router.get("/admin/problems/{slug}")
def admin_problem(slug: str, request: Request, user: Admin, db: DB) -> Response:
    return _admin_problem(request, db, user, slug)


@router.post("/admin/problems/{slug}/weights")
async def admin_weights(slug: str, request: Request, user: Admin, db: DB) -> Response:
    form = await request.form()
    fields = {k[2:]: v for k, v in form.items() if k.startswith("w:") and isinstance(v, str)}

    def act() -> str:
        changed = _set_weights(db, user, slug, fields)
        return f"{changed} weight(s) changed; rescore the problem to apply them to judged work"

    back = f"/admin/problems/{slug}"
    return _act(request, db, back, act, partial(_admin_problem, request, db, user, slug))


def _set_weights(db: Session, user: User, slug: str, fields: dict[str, str]) -> int:
    cases = problems.current_version(db, slug).cases
    current = {c.name: c.weight for c in cases}
    wanted: dict[str, float] = {}
    for name, text in fields.items():
        try:
            weight = float(text)
        except ValueError:
            raise ServiceError(f"case {name}: '{text}' is not a number") from None
        if not 0 <= weight <= 1e6:
            raise ServiceError(f"case {name}: a case weight is a number from 0 to 1e6")
        if name in current and weight != current[name]:
            wanted[name] = weight
    for split in {c.split for c in cases}:
        if not sum(wanted.get(c.name, c.weight) for c in cases if c.split == split) > 0:
            raise ServiceError(
                f"the {split} cases would weigh 0 in all: keep at least one above 0", 422
            )
    # Raises before cuts, so that no step on the way leaves a split without weight.
    for name, weight in sorted(wanted.items(), key=lambda item: -item[1]):
        problems.set_case_weight(db, slug, name, weight, user)
    return len(wanted)


# --- admin: teams, users, tokens ----------------------------------------------------------


def _admin_accounts(
    request: Request,
    db: Session,
    user: User,
    status: int = 200,
    error: str = "",
    new_token: dict[str, str] | None = None,
) -> Response:
    return render(
        request,
        "admin/accounts.html",
        user,
        status,
        teams=list(db.scalars(select(Team).order_by(Team.name))),
        users=list(db.scalars(select(User).order_by(User.username))),
        tokens=auth.list_tokens(db),
        error=error or None,
        new_token=new_token,
    )


@router.get("/admin/accounts")
def admin_accounts(request: Request, user: Admin, db: DB) -> Response:
    return _admin_accounts(request, db, user)


@router.post("/admin/teams")
def admin_create_team(
    request: Request, user: Admin, db: DB, name: Annotated[str, Form()] = ""
) -> Response:
    def act() -> str:
        return f"team '{admin.create_team(db, name, user).name}' created"

    return _act(request, db, "/admin/accounts", act, partial(_admin_accounts, request, db, user))


@router.post("/admin/users")
def admin_create_user(
    request: Request,
    user: Admin,
    db: DB,
    username: Annotated[str, Form()] = "",
    password: Annotated[str, Form()] = "",
    team: Annotated[str, Form()] = "",
    is_admin: Annotated[str, Form()] = "",
) -> Response:
    def act() -> str:
        new = admin.create_user(db, username, password, team or None, bool(is_admin), user)
        return f"user '{new.username}' created"

    return _act(request, db, "/admin/accounts", act, partial(_admin_accounts, request, db, user))


@router.post("/admin/tokens")
def admin_token(
    request: Request,
    user: Admin,
    db: DB,
    username: Annotated[str, Form()] = "",
    name: Annotated[str, Form()] = "",
    expires_in_days: Annotated[str, Form()] = "",
) -> Response:
    """The token is in this response only (not stored, not in the session, not cached)."""
    try:
        until = auth.expiry(_days(expires_in_days), None)
        token = admin.issue_token(db, username.strip(), name.strip(), user, until)
    except ServiceError as exc:
        db.rollback()
        return _admin_accounts(request, db, user, exc.status, exc.message)
    db.commit()
    shown = {"username": username.strip(), "token": token}
    return _admin_accounts(request, db, user, new_token=shown)


def _days(text: str) -> float | None:
    try:
        days = float(text) if text.strip() else None
    except ValueError:
        days = -1.0
    if days is not None and not 0 < days <= 3660:
        raise ServiceError(f"expiry in days must be a number from 0 to 3660, not '{text}'", 422)
    return days


@router.post("/admin/tokens/{token_id}/revoke")
def admin_revoke_token(token_id: int, request: Request, user: Admin, db: DB) -> Response:
    def act() -> str:
        row = revoke_one(db, user, token_id, owner=None)
        return f"token {row['id']} of '{row['username']}' revoked"

    return _act(request, db, "/admin/accounts", act, partial(_admin_accounts, request, db, user))


@router.post("/admin/users/{username}/revoke")
def admin_revoke_access(username: str, request: Request, user: Admin, db: DB) -> Response:
    def act() -> str:
        target = auth.user_named(db, username)
        if target is None:
            raise ServiceError(f"no user '{username}'", 404)
        revoked = revoke_all(db, user, target)
        return (
            f"'{username}': {revoked['tokens']} token(s) revoked, "
            f"{revoked['sessions']} web session(s) ended"
        )

    return _act(request, db, "/admin/accounts", act, partial(_admin_accounts, request, db, user))


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
    if not text.isdigit():
        raise ServiceError(f"'{text}' is not a submission number")
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
