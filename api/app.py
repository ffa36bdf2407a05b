"""The FastAPI application: REST API, web pages, health and metrics."""

from __future__ import annotations

import inspect
import logging
import os
import secrets
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import REGISTRY
from sqlalchemy import text
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.sessions import SessionMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api import gc_freeze, logs, queue, workers
from api.access.bodylimit import BodyLimit
from api.access.deps import DB, Config, user_or_none
from api.access.headers import SecureHeaders, secure
from api.access.inflight import InFlight
from api.access.pathguard import PathGuard
from api.db.session import get_engine, migrate, requests_in_flight, session_scope
from api.errors import ServiceError
from api.live import message_feed
from api.live.broadcast import Broadcaster
from api.logs import AccessLog
from api.metrics import DatabaseCollector, metrics_response
from api.reads import readcache
from api.routes.docs import add_docs
from api.routes.guide import add_guide
from api.routes.hot_reads import HotReads
from api.settings import Settings, get_settings
from judge.errors import InputError

log = logging.getLogger("memorace.api")
_collector: DatabaseCollector | None = None


def secret_key(settings: Settings) -> str:
    """MEMORACE_SECRET_KEY, else one made once and kept in the data directory."""
    if settings.secret_key:
        return settings.secret_key
    path = settings.data_dir / "secret_key"
    if not path.exists():  # N API processes start together: the first to create it wins
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, made = tempfile.mkstemp(dir=path.parent)  # 0600; linked whole, never seen half
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(48))
        with suppress(FileExistsError):
            os.link(made, path)
        os.unlink(made)
    return path.read_text().strip()


def create_app(settings: Settings | None = None) -> FastAPI:
    global _collector
    logs.setup()
    settings = settings or get_settings()
    settings.ensure_dirs()
    migrate(settings.database_url)
    app = FastAPI(
        title="MemoRace",
        version="1",
        description="Judge and scoring service for memory-planning contests",
        docs_url=None,  # add_docs serves /docs from the package (no CDN)
        redoc_url=None,
        lifespan=_lifespan,
        **_no_telemetry(),
    )
    app.state.settings = settings
    app.state.broadcaster = Broadcaster(settings)  # live events; starts with the first stream
    readcache.install(settings.broker_url)  # our writes are news for the other processes
    app.add_middleware(HeadAsGet)  # innermost: the access log still says HEAD
    app.add_middleware(
        SessionMiddleware,
        secret_key=secret_key(settings),
        session_cookie="memorace_session",
        same_site="lax",
        https_only=settings.secure_cookies,  # MEMORACE_SECURE_COOKIES=1 behind TLS
        # Signed, and holds only the CSRF token, a flash message and the id of the web
        # session; who is logged in is decided on the server (api.access.auth, logout ends it).
        max_age=int(settings.session_ttl_s),
    )
    app.add_middleware(BodyLimit)  # before FastAPI reads a body, whoever is asking
    app.add_middleware(PathGuard, api=app)  # NUL, ids out of range: before the database
    app.add_middleware(InFlight, limit=requests_in_flight())  # below the connection pool
    app.add_middleware(HotReads, database_url=settings.database_url)  # kept answers: no slot
    app.add_middleware(SecureHeaders)  # nosniff and a CSP on every answer, kept ones too
    _errors(app)
    app.add_middleware(AccessLog)  # outermost of ours: the time of the whole request
    from api import pages
    from api.routes import accounts, admin, contests, finals, tokens, v1, views

    app.include_router(v1.router)
    app.include_router(views.router)
    app.include_router(admin.router)
    app.include_router(contests.router)
    app.include_router(accounts.router)
    app.include_router(finals.router)
    app.include_router(tokens.admin_router)
    app.include_router(tokens.own_router)
    app.include_router(pages.router)
    _ops(app, settings)
    add_docs(app)
    add_guide(app)
    if _collector is None:
        _collector = DatabaseCollector()
        REGISTRY.register(_collector)
    return app


def _no_telemetry() -> dict[str, Any]:
    """Prometheus (/metrics) is ours; FastAPI's native OpenTelemetry (from 0.16x on) looked
    for providers on every request: about 3 % of a cached read's CPU."""
    if "telemetry" not in inspect.signature(FastAPI.__init__).parameters:
        return {}
    return {"telemetry": {"tracing": False, "metrics": False, "logs": False}}


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    if app.state.broadcaster.hears_news:
        app.state.broadcaster.start()  # its news (Redis, the news table) clears api.reads.readcache
    message_feed.feed(app).start()  # reads from now: a page's stream starts where it was rendered
    warmed = gc_freeze.settle_now_and_after_warmup() if app.state.settings.heap_freeze else None
    yield
    if warmed is not None:
        warmed.cancel()
    await app.state.broadcaster.stop()
    if (feed := getattr(app.state, "message_feed", None)) is not None:
        await feed.stop()


class HeadAsGet:
    """HEAD answers as GET does, without the body: FastAPI routes declare GET only, so
    `HEAD /` was 405. A stream (events) ends at once: its body is never sent."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        ended = False

        async def headers_only(message: Message) -> None:
            nonlocal ended
            if message["type"] == "http.response.body":
                if ended:
                    return
                ended = True
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)


def _errors(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def service_error(request: Request, exc: ServiceError) -> Response:
        answer = _error(request, exc.status, exc.message)
        if getattr(exc, "retry_after", None):  # busy (503), as api.access.login.hash_slot says
            answer.headers["Retry-After"] = exc.retry_after  # type: ignore[attr-defined]
        return answer

    @app.exception_handler(InputError)
    async def input_error(request: Request, exc: InputError) -> Response:
        return _error(request, 400, str(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'][1:]) or 'request'}: {e['msg']}"
            for e in exc.errors()
        )
        return _error(request, 422, f"invalid request: {problems}")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        return _error(request, exc.status_code, str(exc.detail))

    @app.exception_handler(Exception)
    async def crash(request: Request, exc: Exception) -> Response:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return _error(request, 500, "internal error: the organizers have the details in the log")


def _error(request: Request, status: int, message: str) -> Response:
    from api.pages import error_page, wants_html

    if wants_html(request):
        return secure(error_page(request, status, message))
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    # secure: a crash's answer is sent outside every middleware (Starlette's last resort)
    return secure(JSONResponse({"detail": message}, status_code=status, headers=headers))


def _ops(app: FastAPI, settings: Settings) -> None:
    @app.get("/healthz", tags=["ops"])
    def healthz(request: Request, strict: bool = False) -> JSONResponse:
        """The API's liveness (200 while the API, its database and its queue answer),
        and the workers' presence: no live worker is a warning, an error only with
        `?strict=1`. Anyone sees the counts; the workers' names (host names) and a
        failing part's error text only an organizer's token."""
        checks: dict[str, Any] = {}
        try:
            with get_engine(settings.database_url).connect() as conn:
                conn.execute(text("SELECT 1"))
            checks["database"] = "ok"
        except Exception as exc:
            log.warning("healthz: the database does not answer: %s", exc)
            checks["database"] = "error"
        checks["queue"] = "ok" if queue.queue_ready() else "unreachable"
        healthy = all(v == "ok" for v in checks.values())
        body: dict[str, Any] = {"ok": healthy, **checks, "warnings": []}
        if checks["database"] == "ok":
            with session_scope(settings.database_url) as db:
                body["workers"] = workers.health(db, settings, names=_is_organizer(request, db))
            if body["workers"]["alive"] == 0:
                body["warnings"].append(workers.NO_WORKER)
                healthy = healthy and not strict
        body["ok"] = healthy
        return JSONResponse(body, status_code=200 if healthy else 503)

    def _is_organizer(request: Request, db: Any) -> bool:
        # A probe without a token, or with a wrong one, still gets its answer.
        if "authorization" not in request.headers:
            return False
        user = user_or_none(request, db, settings)
        return user is not None and user.is_admin

    @app.get("/metrics", tags=["ops"])
    def metrics(request: Request, db: DB, config: Config) -> Response:
        """For an organizer's token (Prometheus: `authorization: {credentials_file: ...}`)."""
        return metrics_response(request, db, config)
