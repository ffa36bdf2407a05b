"""Server-rendered web pages (Jinja2): what contestants and organizers see in a browser.

Pages call the same service functions as the JSON API (api.submissions, api.admin,
api.problems, ...), so both always agree. Every POST form carries a CSRF token
(checked for the whole router by `csrf_guard`). Errors reach browsers as HTML pages
through `error_page`; a page that needs a login sends the browser to /login.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from http import HTTPStatus
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

import jinja2
from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from markdown_it import MarkdownIt
from markupsafe import Markup
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from api import admin, audit, problems, queue, submissions
from api.audit import record
from api.auth import user_for_login
from api.db.models import Contest, Submission, Team, User
from api.deps import DB, Admin, Config, Contestant, Viewer
from api.errors import Forbidden, NotFound, ServiceError
from api.leaderboard import leaderboard
from api.routes_admin import PACKAGE_LIMIT_BYTES
from api.routes_v1 import check_form_problem
from api.settings import Settings
from judge.errors import InputError
from judge.package import load_problem
from judge.pictures.placement import human_bytes
from judge.pipeline import stored_plan
from judge.submission import SUFFIXES
from judge.types import get_type

log = logging.getLogger("memorace.api")
HERE = Path(__file__).parent
STATIC = HERE / "static"
CSRF_FIELD = "csrf_token"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
UPLOAD_SUFFIXES = ",".join(SUFFIXES)
# Scripts only with this response's nonce: an injected <script> would not run.
CSP = (
    "default-src 'self'; script-src 'nonce-{nonce}'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
# Statements are organizer Markdown; raw HTML stays text, so a statement cannot script.
_markdown = MarkdownIt("commonmark", {"html": False})


# --- CSRF ---------------------------------------------------------------------------------


def csrf_token(request: Request) -> str:
    """The session's CSRF token, made on first use (the session cookie is signed)."""
    token = request.session.get("csrf")
    if not isinstance(token, str) or not token:
        token = secrets.token_urlsafe(32)
        request.session["csrf"] = token
    return token


async def csrf_guard(request: Request) -> None:
    """Every state-changing request of the pages must echo the session's token."""
    if request.method in SAFE_METHODS:
        return
    form = await request.form()  # cached: the endpoint's Form(...) fields reuse it
    sent = form.get(CSRF_FIELD)
    expected = request.session.get("csrf") if "session" in request.scope else None
    if not (
        isinstance(sent, str)
        and isinstance(expected, str)
        and expected
        and secrets.compare_digest(sent.encode(), expected.encode())
    ):
        raise Forbidden(
            "this form's security token (CSRF) is missing or out of date; "
            "reload the page and send the form again"
        )


router = APIRouter(include_in_schema=False, dependencies=[Depends(csrf_guard)])


# --- rendering ----------------------------------------------------------------------------


def _score(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _when(value: datetime | str | None) -> str:
    if not value:
        return "—"
    stamp = datetime.fromisoformat(value) if isinstance(value, str) else value
    stamp = stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)  # SQLite: naive UTC
    return stamp.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _bytes(value: int | None) -> str:
    return "—" if value is None else human_bytes(int(value))


@jinja2.pass_context
def _csrf_input(context: Any) -> Markup:
    return Markup('<input type="hidden" name="{}" value="{}">').format(CSRF_FIELD, context["csrf"])


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,  # every template, whatever its name
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(score=_score, when=_when, bytes=_bytes)
    env.globals.update(csrf_input=_csrf_input, static_version=_static_version())
    return env


def _static_version() -> str:
    """Changes with the CSS, so browsers may cache it for long."""
    digest = hashlib.sha256()
    for path in sorted(STATIC.glob("*")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:10]


templates = Jinja2Templates(env=_environment())


def render(
    request: Request,
    name: str,
    user: User | None,
    status: int = 200,
    **context: Any,
) -> HTMLResponse:
    nonce = secrets.token_urlsafe(16)
    has_session = "session" in request.scope  # not on the 500 page (outside the middleware)
    context.setdefault("error", None)
    context.setdefault("bare", False)
    context.update(
        user=user,
        csrf=csrf_token(request) if has_session else "",
        nonce=nonce,
        flash=request.session.pop("flash", None) if has_session else None,
    )
    response = templates.TemplateResponse(request, name, context, status_code=status)
    _secure(response, nonce)
    return response


def _secure(response: Response, nonce: str) -> None:
    response.headers["Content-Security-Policy"] = CSP.format(nonce=nonce)
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    response.headers["Cache-Control"] = "no-store"  # personal pages; tokens shown once


def redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def done(request: Request, url: str, message: str, kind: str = "ok") -> RedirectResponse:
    """After a successful POST: say what happened on the next page (POST-redirect-GET)."""
    request.session["flash"] = [kind, message]
    return redirect(url)


def wants_html(request: Request) -> bool:
    """Browsers (and clients that accept anything) get HTML errors outside /api/;
    API clients, and whoever asks for JSON, get JSON."""
    if request.url.path.startswith("/api/"):
        return False
    accept = request.headers.get("accept", "")
    return "text/html" in accept or "json" not in accept


def error_page(request: Request, status: int, message: str) -> Response:
    """401 sends a browser to the login form (back here afterwards); anything else is
    an HTML page with the message."""
    if status == 401:
        target = request.url.path
        if request.url.query:
            target += "?" + request.url.query
        next_part = f"?next={quote(target)}" if request.method in SAFE_METHODS else ""
        return redirect("/login" + next_part)
    try:
        title = HTTPStatus(status).phrase
    except ValueError:
        title = "Error"
    return render(
        request,
        "error.html",
        None,
        status,
        status_code=status,
        title=title,
        message=message,
        bare=True,  # no user lookup here: the nav shows no login state
    )


def _safe_next(target: str) -> str:
    """Only paths of this site: no open redirect to another host."""
    plain = all(c.isprintable() and not c.isspace() and c != "\\" for c in target)
    return target if plain and target.startswith("/") and not target.startswith("//") else "/"


# --- static -------------------------------------------------------------------------------


@router.get("/static/{name}")
def static(name: str) -> FileResponse:
    path = STATIC / name
    if "/" in name or name.startswith(".") or not path.is_file():
        raise NotFound(f"no static file '{name}'")
    return FileResponse(path, headers={"Cache-Control": "public, max-age=86400"})


# --- login --------------------------------------------------------------------------------


@router.get("/login")
def login_form(request: Request, db: DB, next: str = "/") -> Response:
    # The session only: a bad Authorization header must not bounce this page to itself.
    user_id = request.session.get("user_id")
    if user_id and db.get(User, user_id) is not None:
        return redirect(_safe_next(next))
    return render(request, "login.html", None, next=_safe_next(next), username="")


@router.post("/login")
def login(
    request: Request,
    db: DB,
    username: Annotated[str, Form()] = "",
    password: Annotated[str, Form()] = "",
    next: Annotated[str, Form()] = "/",
) -> Response:
    user = user_for_login(db, username.strip(), password)
    if user is None:
        return render(
            request,
            "login.html",
            None,
            401,
            next=_safe_next(next),
            username=username,
            error="wrong username or password",
        )
    # A fresh session (and CSRF token) at login: nothing from before carries over.
    request.session.clear()
    request.session["user_id"] = user.id
    csrf_token(request)
    return redirect(_safe_next(next))


@router.post("/logout")
def logout(request: Request) -> Response:
    request.session.clear()
    return redirect("/login")


# --- problems and leaderboards ------------------------------------------------------------


@router.get("/")
@router.get("/problems")
def problem_list(request: Request, db: DB, viewer: Viewer) -> Response:
    return render(
        request,
        "problems.html",
        viewer,
        problems=problems.all_current(db),
        contest=db.get(Contest, 1),
    )


@router.get("/problems/{slug}")
def problem_page(slug: str, request: Request, db: DB, viewer: Viewer) -> Response:
    version = problems.current_version(db, slug)
    statement = Markup(_markdown.render(version.statement))  # raw HTML disabled
    return render(request, "problem.html", viewer, version=version, statement=statement)


@router.get("/problems/{slug}/leaderboard")
def leaderboard_page(slug: str, request: Request, db: DB, viewer: Viewer) -> Response:
    board = leaderboard(db, slug, viewer)
    return render(
        request,
        "leaderboard.html",
        viewer,
        board=board,
        version=problems.current_version(db, slug),
        own_team=viewer.team.name if viewer and viewer.team else None,
    )


# --- submitting ---------------------------------------------------------------------------


def _submit_form(
    request: Request, db: Session, user: User, problem: str, status: int = 200, error: str = ""
) -> Response:
    return render(
        request,
        "submit.html",
        user,
        status,
        problems=problems.all_current(db),
        chosen=problem,
        accept=UPLOAD_SUFFIXES,
        error=error or None,
    )


@router.get("/submit")
def submit_form(request: Request, user: Contestant, db: DB, problem: str = "") -> Response:
    return _submit_form(request, db, user, problem)


@router.post("/submit")
def submit(
    request: Request,
    user: Contestant,
    db: DB,
    settings: Config,
    problem: Annotated[str, Form()] = "",
    file: Annotated[UploadFile | None, File()] = None,
) -> Response:
    """The same steps as POST /api/v1/submissions, then the submission's page."""
    try:
        if file is None or not file.filename:
            raise ServiceError("choose the planner file to upload")
        data = file.file.read(settings.upload_limit_bytes + 1)
        sub, reused = submissions.create_submission(
            db, settings, user, check_form_problem(problem), file.filename, data
        )
    except ServiceError as exc:
        db.rollback()
        return _submit_form(request, db, user, problem, exc.status, exc.message)
    db.commit()
    if reused:
        return done(request, f"/submissions/{sub.id}", "identical to this earlier submission")
    submissions.send(db, sub)
    return done(request, f"/submissions/{sub.id}", "submitted: it waits for a judge")


# --- submissions --------------------------------------------------------------------------


@router.get("/submissions")
def submission_list(request: Request, user: Contestant, db: DB, limit: int = 100) -> Response:
    # Organizers have no team of their own: they see everybody's.
    subs = submissions.list_submissions(db, user, min(max(limit, 1), 500), not user.is_admin)
    rows = [submissions.submission_dict(db, s, user) for s in subs]
    return render(request, "submissions.html", user, rows=rows)


def case_rows(body: dict[str, Any], admin_view: bool) -> list[dict[str, Any]]:
    """Hidden cases show only verdict and score to contestants."""
    rows = []
    for result in body["results"]:
        full = admin_view or result["split"] == "public"
        shown = dict(result)
        if not full:
            for key in (
                "message",
                "peak",
                "lower_bound",
                "time_s",
                "log",
                "plan_digest",
                "makespan_us",
            ):
                shown[key] = None
        shown["full"] = full
        rows.append(shown)
    return rows


def _live_context(db: Session, sub: Submission, user: User) -> dict[str, Any]:
    body = submissions.submission_dict(db, sub, user)
    return {
        "sub": body,
        "rows": case_rows(body, user.is_admin),
        "drawable": True,  # every type may draw; a note says why when it cannot
        "bound_unit": get_type(sub.version.type).bound_unit,
        "live": body["status"] in ("queued", "running"),
    }


@router.get("/submissions/{sub_id}")
def submission_page(
    sub_id: int,
    request: Request,
    user: Contestant,
    db: DB,
    settings: Config,
    case: str = "",
) -> Response:
    sub = submissions.get_submission(db, sub_id, user)
    context = _live_context(db, sub, user)
    picture = _picture(settings, sub, context["rows"], case, user) if case else None
    return render(request, "submission.html", user, **context, picture=picture, case=case)


@router.get("/submissions/{sub_id}/live")
def submission_live(sub_id: int, request: Request, user: Contestant, db: DB) -> Response:
    """The status block and case table alone: the page's script swaps them in."""
    sub = submissions.get_submission(db, sub_id, user)
    return render(request, "_live.html", user, **_live_context(db, sub, user), case="")


def _picture(
    settings: Settings, sub: Submission, rows: list[dict[str, Any]], name: str, user: User
) -> dict[str, Any]:
    """The chosen case's plan as SVG, or a note saying why there is none."""
    row = next((r for r in rows if r["case"] == name), None)
    if row is None or not (user.is_admin or row["split"] == "public"):
        raise NotFound(f"no public case '{name}' in submission {sub.id}'s results")
    picture: dict[str, Any] = {"case": row, "svg": None, "note": "", "type": sub.version.type}
    if not row["plan_digest"]:
        picture["note"] = "this case left no plan to draw"
    else:
        picture.update(_draw(settings, sub, row))
    return picture


def _draw(settings: Settings, sub: Submission, row: dict[str, Any]) -> dict[str, Any]:
    """Whatever picture the problem's type draws (each type owns its own)."""
    path = stored_plan(settings.plans, row["plan_digest"])
    if not path.is_file():
        return {"note": "the stored plan file is missing on the server"}
    try:
        package = load_problem(Path(sub.version.package_path))
        spec = next(s for s in package.cases if s.name == row["case"])
        ptype = package.ptype
        case = ptype.parse_case(spec.path, spec.capacity)
        svg = ptype.picture(case, ptype.parse_plan(path, case), row["lower_bound"] or 0)
    except InputError as exc:  # a BAD_OUTPUT or invalid plan: nothing (more) to draw
        return {"note": f"the plan cannot be drawn: {exc.message}"}
    if svg is None:
        return {"note": f"problems of type {package.type} have no plan picture"}
    return {"svg": Markup(svg)}  # every picture escapes each text it writes


# --- admin: overview and contest ----------------------------------------------------------


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
    """A datetime-local field, read as UTC; empty clears it."""
    if not value.strip():
        return None
    try:
        stamp = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ServiceError(f"{field}: '{value}' is not a date and time") from None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


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
) -> Response:
    def act() -> str:
        changes = {
            "title": title.strip() or "MemoRace",
            "start_at": _stamp("start", start_at),
            "end_at": _stamp("end", end_at),
            "freeze_at": _stamp("freeze", freeze_at),
            "hidden_revealed": bool(hidden_revealed),
        }
        admin.update_contest(db, user, changes)
        return "contest settings saved"

    return _act(request, db, "/admin", act, partial(_admin_home, request, db, user))


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
        error=error or None,
    )


@router.get("/admin/problems")
def admin_problems(request: Request, user: Admin, db: DB) -> Response:
    return _admin_problems(request, db, user)


@router.post("/admin/problems")
def admin_import(
    request: Request,
    user: Admin,
    db: DB,
    settings: Config,
    file: Annotated[UploadFile | None, File()] = None,
) -> Response:
    def act() -> str:
        if file is None or not file.filename:
            raise ServiceError("choose a problem package (.zip or .tar.gz) to upload")
        version = _import(db, settings, user, file)
        return (
            f"problem '{version.problem.slug}' is at version {version.number} "
            f"({len(version.cases)} cases)"
        )

    return _act(request, db, "/admin/problems", act, partial(_admin_problems, request, db, user))


def _import(db: Session, settings: Settings, user: User, file: UploadFile) -> Any:
    """As POST /api/v1/admin/problems: the upload to a temporary file, size-bounded."""
    name = Path(file.filename or "package.zip").name
    with tempfile.TemporaryDirectory(prefix="memorace-upload-") as tmp:
        upload = Path(tmp) / name
        size = 0
        with upload.open("wb") as out:
            while chunk := file.file.read(2**20):
                size += len(chunk)
                if size > PACKAGE_LIMIT_BYTES:
                    raise ServiceError(
                        f"a package upload is at most {PACKAGE_LIMIT_BYTES} bytes", 413
                    )
                out.write(chunk)
        return problems.import_upload(db, settings, upload, user)


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
    current = {c.name: c.weight for c in problems.current_version(db, slug).cases}
    changed = 0
    for name, text in fields.items():
        try:
            weight = float(text)
        except ValueError:
            raise ServiceError(f"case {name}: '{text}' is not a number") from None
        if name in current and weight != current[name]:
            problems.set_case_weight(db, slug, name, weight, user)
            changed += 1
    return changed


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
) -> Response:
    """The token is in this response only (not stored, not in the session, not cached)."""
    try:
        token = admin.issue_token(db, username.strip(), name.strip(), user)
    except ServiceError as exc:
        db.rollback()
        return _admin_accounts(request, db, user, exc.status, exc.message)
    db.commit()
    shown = {"username": username.strip(), "token": token}
    return _admin_accounts(request, db, user, new_token=shown)


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
