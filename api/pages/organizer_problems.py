"""Pages for organizers: problems (import, versions, weights, rescore)."""

from __future__ import annotations

from functools import partial
from typing import Any

from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from sqlalchemy.orm import Session

from api import queue
from api.access.deps import DB, Admin, Config
from api.actions import imports, problems
from api.actions.audit import record
from api.db.models import User
from api.errors import ServiceError
from api.pages.common import CSRF_FIELD, check_csrf, done, log, render, router
from api.pages.organizer import _act
from api.settings import Settings


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
