"""Pages for contestants (and anyone logged in): login, problems, leaderboards,
submitting, submissions with live progress and plan pictures."""

from __future__ import annotations

import math
from typing import Annotated, Any

from fastapi import Form, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from markdown_it import MarkdownIt
from markupsafe import Markup
from sqlalchemy.orm import Session

from api.access.auth import end_session
from api.access.deps import (
    DB,
    SESSION_KEY,
    Config,
    Contestant,
    Reader,
    Viewer,
    client_address,
    session_viewer,
)
from api.access.login import Result as LoginResult
from api.access.login import attempt
from api.access.uploads import Upload, read_upload
from api.actions import baselines, contests, finals, problems, submissions
from api.blobs import plan_file
from api.db.models import Submission, User
from api.errors import NotFound, ServiceError
from api.pages.common import (
    CSRF_FIELD,
    UPLOAD_SUFFIXES,
    _safe_next,
    check_csrf,
    chose_contest,
    csrf_token,
    done,
    page_contest,
    redirect,
    render,
    router,
    wants_html,
)
from api.pages.problem import known_main, problem_main
from api.reads import compare, history
from api.reads.leaderboard import cached_leaderboard
from api.routes.v1 import BeforeId, check_form_problem, page_size
from api.settings import Settings
from api.workers import alive_count
from judge.errors import InputError
from judge.starterkit import type_rules
from judge.types import get_type, known_types


@router.get("/login")
def login_form(request: Request, db: DB, next: str = "/") -> Response:
    # The session only: a bad Authorization header must not bounce this page to itself.
    if session_viewer(request, db) is not None:
        return redirect(_safe_next(next))
    return render(request, "login.html", None, next=_safe_next(next), username="")


@router.post("/login")
async def login(
    request: Request,
    settings: Config,
    username: Annotated[str, Form()] = "",
    password: Annotated[str, Form()] = "",
    next: Annotated[str, Form()] = "/",
) -> Response:
    """Async: a login waiting for a password-hash slot holds no thread (api.access.login)."""
    address = client_address(request)
    result = await attempt(request.app, settings, username.strip(), password, address)
    if result.user_id is None:
        return _login_refused(request, username, next, result)
    # A fresh session (and CSRF token) at login: nothing from before carries over.
    request.session.clear()
    request.session[SESSION_KEY] = result.session_id
    csrf_token(request)
    return redirect(_safe_next(next))


def _login_refused(request: Request, username: str, next: str, result: LoginResult) -> Response:
    """401 for a wrong password; 429 (throttled) or 503 (busy) with Retry-After."""
    wait = math.ceil(result.retry_after)
    if result.refusal:
        status, error = 403, result.refusal
    elif result.busy:
        status, error = 503, f"the server is busy checking other logins; try again in {wait} s"
    elif wait:
        status = 429
        error = (
            f"too many failed logins for this account or from this address; try again in {wait} s"
        )
    else:
        status, error = 401, "wrong username or password"
    headers = {"Retry-After": str(wait)} if wait else {}
    if not wants_html(request):
        return JSONResponse({"detail": error}, status_code=status, headers=headers)
    page = render(
        request, "login.html", None, status, next=_safe_next(next), username=username, error=error
    )
    page.headers.update(headers)
    return page


@router.post("/logout")
def logout(request: Request, db: DB) -> Response:
    """Ends the session on the server: the old cookie, replayed, logs nobody in."""
    session_id = request.session.get(SESSION_KEY)
    if isinstance(session_id, str):
        end_session(db, session_id)
    request.session.clear()
    return redirect("/login")


# --- problems and leaderboards ------------------------------------------------------------


@router.get("/")
@router.get("/problems")
def problem_list(request: Request, db: DB, viewer: Viewer) -> Response:
    """The contest's problems (before its start: none, but for organizers), and the
    other contests the viewer may switch to."""
    contest = page_contest(request, db, viewer)
    shown = contests.started(contest) or bool(viewer and viewer.is_admin)
    return render(
        request,
        "problems.html",
        viewer,
        problems=problems.all_current(db, contest) if shown else [],
        contest=contest,
        others=[c for c in contests.visible(db, viewer) if c.id != contest.id],
    )


@router.get("/problems/{slug}")
async def problem_page(slug: str, request: Request, db: DB, viewer: Reader) -> Response:
    """async: from api.reads.readcache, the page needs no database session, only its frame."""
    found = None if chose_contest(request) else known_main(db, slug, viewer)
    title, main = found or await run_in_threadpool(_problem_main, request, db, slug, viewer)
    return render(request, "problem.html", viewer, title=title, body=main)


def _problem_main(request: Request, db: Session, slug: str, viewer: Any) -> tuple[str, Markup]:
    contest = page_contest(request, db, viewer)
    contests.check_started(contest, viewer)
    return problem_main(db, slug, viewer, contest)


# The type rules' tables (the online faults, the offload fields) need the table rule.
_rules_markdown = MarkdownIt("commonmark", {"html": False}).enable("table")


@router.get("/types/{name}")
def type_page(name: str, request: Request, viewer: Viewer) -> Response:
    """A problem type's rules (its README), linked from each problem of that type."""
    if name not in known_types() or (text := type_rules(name)) is None:
        raise NotFound(f"no problem type '{name}'")
    rules = Markup(_rules_markdown.render(text))  # raw HTML disabled
    return render(request, "type.html", viewer, ptype=name, rules=rules)


@router.get("/problems/{slug}/leaderboard")
def leaderboard_page(slug: str, request: Request, db: DB, viewer: Viewer) -> Response:
    contest = page_contest(request, db, viewer)
    contests.check_started(contest, viewer)
    board = cached_leaderboard(db, slug, viewer, contest).body  # shared: read, never changed
    return render(
        request,
        "leaderboard.html",
        viewer,
        board=board,
        rows=baselines.interleave(board),
        charts=[(c.score, Markup(c.svg)) for c in history.charts(db, slug, viewer, contest)],
        version=problems.current_version(db, slug, contest),
        own_team=viewer.team.name if viewer and viewer.team else None,
    )


@router.get("/leaderboard")
def all_leaderboards(request: Request, db: DB, viewer: Viewer) -> Response:
    """Every problem's board on one page (the top rows; each links to its full board)."""
    contest = page_contest(request, db, viewer)
    contests.check_started(contest, viewer)
    versions = problems.all_current(db, contest)
    boards = [(v, cached_leaderboard(db, v.problem.slug, viewer, contest).body) for v in versions]
    own_team = viewer.team.name if viewer and viewer.team else None
    return render(request, "leaderboards.html", viewer, boards=boards, top=10, own_team=own_team)


# --- submitting ---------------------------------------------------------------------------


def _submit_form(
    request: Request, db: Session, user: User, problem: str, status: int = 200, error: str = ""
) -> Response:
    contest = _form_contest(request, db, user)
    return render(
        request,
        "submit.html",
        user,
        status,
        problems=problems.all_current(db, contest),
        contest=contest.slug,  # the form says it: another tab may choose another contest
        chosen=problem,
        accept=UPLOAD_SUFFIXES,
        error=error or None,
    )


@router.get("/submit")
def submit_form(request: Request, user: Contestant, db: DB, problem: str = "") -> Response:
    return _submit_form(request, db, user, problem)


@router.post("/submit")
async def submit(request: Request, user: Contestant, db: DB, settings: Config) -> Response:
    """The same steps as POST /api/v1/submissions, then the submission's page. The form
    is read here, after the login is checked, with the upload limit as a hard cap."""
    try:
        upload = await read_upload(request, settings.upload_limit_bytes)
    except ServiceError as exc:
        return await run_in_threadpool(_submit_form, request, db, user, "", exc.status, exc.message)
    check_csrf(request, upload.fields.get(CSRF_FIELD))
    return await run_in_threadpool(_submit, request, db, settings, user, upload)


def _submit(
    request: Request, db: Session, settings: Settings, user: User, upload: Upload
) -> Response:
    problem = upload.fields.get("problem", "")
    try:
        if not upload.filename:
            raise ServiceError("choose the planner file to upload")
        chosen = upload.fields.get("contest", "").strip()[:64] or None
        sub, reused = submissions.create_submission(
            db, settings, user, check_form_problem(problem), upload.filename, upload.data,
            chosen or page_contest(request, db, user).slug,
        )  # fmt: skip
    except ServiceError as exc:
        db.rollback()
        return _submit_form(request, db, user, problem, exc.status, exc.message)
    db.commit()
    if reused:
        return done(request, f"/submissions/{sub.id}", "identical to this earlier submission")
    submissions.send(db, sub)
    if alive_count(db, settings):
        return done(request, f"/submissions/{sub.id}", "submitted: it waits for a judge")
    why = "submitted, but no worker is running now: it will be judged when one starts"
    return done(request, f"/submissions/{sub.id}", why, "warn")


def _form_contest(request: Request, db: Session, user: User) -> Any:
    """The submit form's contest; a broken choice shows the viewer's own."""
    try:
        return page_contest(request, db, user)
    except ServiceError:
        return contests.resolve(db, user)


# --- submissions --------------------------------------------------------------------------


@router.get("/submissions")
def submission_list(
    request: Request, user: Contestant, db: DB, limit: int = 50, before_id: BeforeId = None
) -> Response:
    # Organizers have no team of their own: they see everybody's.
    subs = submissions.list_submissions(db, user, page_size(limit), not user.is_admin, before_id)
    rows = submissions.submission_dicts(db, subs, user)
    return render(request, "submissions.html", user, rows=rows)


def case_rows(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The API's rows (withheld fields already null), marked for the table."""
    return [{**result, "full": not result["withheld"]} for result in body["results"]]


def _live_context(db: Session, sub: Submission, user: User) -> dict[str, Any]:
    body = submissions.submission_dict(db, sub, user)
    return {
        "sub": body,
        "rows": case_rows(body),
        "drawable": True,  # every type may draw; a note says why when it cannot
        "bound_unit": get_type(sub.version.type).bound_unit,
        # An allocator answered request by request (online): its µs/request beside the score.
        "per_request": bool(getattr(get_type(sub.version.type), "interactive", False)),
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
    picture = _picture(settings, sub, context["rows"], case) if case else None
    compared = compare.comparison(db, sub, user) if sub.status == "done" else None
    return render(
        request, "submission.html", user, **context, picture=picture, case=case,
        compared=compared, final=_final_view(db, sub, user),
    )  # fmt: skip


def _final_view(db: Session, sub: Submission, user: User) -> dict[str, Any] | None:
    """The team's picks for the final judging (api.actions.finals), on its own submissions'
    pages."""
    contest = contests.of_submission(db, sub)
    if user.team is None or sub.team_id != user.team_id or not finals.final_mode(db, contest):
        return None
    try:
        view = finals.view(db, user.team, sub.version.problem.slug, contest)
    except NotFound:  # the problem left the contest since: no picks to show
        return None
    return {**view, "this": sub.id in view["judged_at_the_end"],
            "picked_this": sub.id in view["picked"]}  # fmt: skip


@router.post("/submissions/{sub_id}/final-pick")
def pick_for_final(
    sub_id: int, request: Request, user: Contestant, db: DB, pick: Annotated[str, Form()] = ""
) -> Response:
    """Add this submission to the team's picks for the final judging, or take it out."""
    sub = submissions.get_submission(db, sub_id, user)
    back = f"/submissions/{sub.id}"
    slug = sub.version.problem.slug
    if user.team is None:
        return done(request, back, "only a team's members pick its submissions", "warn")
    contest = contests.of_submission(db, sub)
    try:
        picked = [i for i in finals.view(db, user.team, slug, contest)["picked"] if i != sub.id]
        finals.choose(db, user, slug, [*picked, sub.id] if pick == "1" else picked, contest)
    except ServiceError as exc:
        db.rollback()
        return done(request, back, exc.message, "warn")
    db.commit()
    return done(request, back, "picked for the final judging" if pick == "1" else "unpicked")


@router.get("/submissions/{sub_id}/live")
def submission_live(sub_id: int, request: Request, user: Contestant, db: DB) -> Response:
    """The status block and case table alone: the page's script swaps them in."""
    sub = submissions.get_submission(db, sub_id, user)
    return render(request, "_live.html", user, **_live_context(db, sub, user), case="")


def _picture(
    settings: Settings, sub: Submission, rows: list[dict[str, Any]], name: str
) -> dict[str, Any]:
    """The chosen case's plan as SVG, or a note saying why there is none."""
    row = next((r for r in rows if r["case"] == name), None)
    if row is None or not row["full"]:  # a withheld hidden case has nothing to draw
        raise NotFound(f"no public case '{name}' in submission {sub.id}'s results")
    picture: dict[str, Any] = {"case": row, "svg": None, "note": "", "type": sub.version.type}
    if not row["plan_digest"]:
        picture["note"] = "this case left no plan to draw"
    else:
        picture.update(_draw(settings, sub, row))
    return picture


def _draw(settings: Settings, sub: Submission, row: dict[str, Any]) -> dict[str, Any]:
    """Whatever picture the problem's type draws (each type owns its own)."""
    path = plan_file(settings, row["plan_digest"])
    if path is None:
        return {"note": "the stored plan file is missing on the server"}
    try:
        package = problems.package_of(settings, sub.version)
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
