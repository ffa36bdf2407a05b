"""What every page shares: the router with its CSRF guard, templates, rendering,
redirects, error pages and the static files."""

from __future__ import annotations

import hashlib
import logging
import secrets
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from markdown_it import MarkdownIt
from markupsafe import Markup
from sqlalchemy.orm import Session

from api.access.caller import Caller
from api.actions import contests
from api.db.models import Contest, User
from api.errors import Forbidden, NotFound, ServiceError
from judge.pictures.svg import human_bytes
from judge.submission import SUFFIXES

log = logging.getLogger("memorace.api")
HERE = Path(__file__).parent.parent  # api/: templates and static live there
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


# Upload forms read their own body (api.access.uploads: after the login is checked, size-capped)
# and then call check_csrf; the guard must not read it first.
UPLOAD_PATHS = frozenset({"/submit", "/admin/problems"})
# For every page form, whoever parses it first (this guard, or FastAPI for Form(...)).
FORM_LIMITS: dict[str, int] = {"max_files": 0, "max_fields": 1000}


async def csrf_guard(request: Request) -> None:
    """Every state-changing request of the pages must echo the session's token."""
    if request.method in SAFE_METHODS or request.url.path in UPLOAD_PATHS:
        return
    # No file parts (a page form never has one: they would be spooled to disk before
    # the refusal); cached, so the endpoint's Form(...) fields reuse this parse.
    form = await request.form(**FORM_LIMITS)
    check_csrf(request, form.get(CSRF_FIELD))
    if any(isinstance(v, str) and "\x00" in v for v in form.values()):
        raise ServiceError("a form field holds a NUL character", 422)  # PostgreSQL: a 500


def check_csrf(request: Request, sent: Any) -> None:
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


router = APIRouter(
    include_in_schema=False, dependencies=[Depends(csrf_guard)], form_limits=FORM_LIMITS
)


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
    """The form's CSRF token, made (in the session) only when a page has a form: a page
    without one sets no session cookie, which would follow each later request of a
    token's holder (curl, a script) and keep it from the answers kept before the
    framework (api.routes.hot_reads serves none with a cookie)."""
    request = context.get("request")
    has_session = request is not None and "session" in request.scope  # not on the 500 page
    token = csrf_token(request) if has_session else ""
    return Markup('<input type="hidden" name="{}" value="{}">').format(CSRF_FIELD, token)


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


def page_contest(request: Request, db: Session, viewer: Any) -> Contest:
    """The contest a page shows: `?contest=` (kept in the session for the next pages),
    else the session's choice, else the viewer's contest (api.actions.contests.resolve)."""
    has_session = "session" in request.scope
    asked = request.query_params.get("contest")
    if asked:
        row = contests.resolve(db, viewer, asked[:64])
        if has_session:
            request.session["contest"] = row.slug
        return row
    kept = request.session.get("contest") if has_session else None
    if isinstance(kept, str):
        try:
            return contests.resolve(db, viewer, kept)
        except NotFound:  # no longer the viewer's (a registration withdrawn)
            request.session.pop("contest", None)
    return contests.resolve(db, viewer)


def chose_contest(request: Request) -> bool:
    """Whether the page's contest comes from the request or the session (not the default)."""
    kept = "session" in request.scope and "contest" in request.session
    return kept or "contest" in request.query_params


def render(
    request: Request,
    name: str,
    user: User | Caller | None,
    status: int = 200,
    **context: Any,
) -> HTMLResponse:
    nonce = secrets.token_urlsafe(16)
    has_session = "session" in request.scope  # not on the 500 page (outside the middleware)
    context.setdefault("error", None)
    context.setdefault("bare", False)
    context.update(
        user=user,
        # A token's holder has no web session to log out of.
        by_token="authorization" in request.headers,
        nonce=nonce,
        flash=request.session.pop("flash", None) if has_session else None,
        # Where the page's live messages start (api.live.message_feed): nothing made after
        # this render is missed by the stream the page then opens.
        feed_mark=getattr(getattr(request.app.state, "message_feed", None), "mark_now", ""),
    )
    response = templates.TemplateResponse(request, name, context, status_code=status)
    _secure(response, nonce)
    return response


# Every page's headers but its CSP (api.routes.hot_reads sends them too). no-store: personal
# pages; tokens are shown once.
SECURE_HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin",
                  "Cache-Control": "no-store"}  # fmt: skip


def _secure(response: Response, nonce: str) -> None:
    response.headers["Content-Security-Policy"] = CSP.format(nonce=nonce)
    response.headers.update(SECURE_HEADERS)


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
