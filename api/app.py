"""The FastAPI application: REST API, web pages, health and metrics."""

from __future__ import annotations

import logging
import secrets
import time
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from sqlalchemy import text
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.sessions import SessionMiddleware

from api import logs, queue
from api.db.session import get_engine, migrate
from api.errors import ServiceError
from api.metrics import DatabaseCollector
from api.settings import Settings, get_settings
from judge.errors import InputError

log = logging.getLogger("memorace.api")
_collector: DatabaseCollector | None = None


def secret_key(settings: Settings) -> str:
    """MEMORACE_SECRET_KEY, else one made once and kept in the data directory."""
    if settings.secret_key:
        return settings.secret_key
    path = settings.data_dir / "secret_key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(48))
        path.chmod(0o600)
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
    )
    app.state.settings = settings
    app.add_middleware(
        SessionMiddleware,
        secret_key=secret_key(settings),
        session_cookie="memorace_session",
        same_site="lax",
        https_only=settings.secure_cookies,  # MEMORACE_SECURE_COOKIES=1 behind TLS
    )
    _errors(app)
    _access_log(app)
    from api import pages, routes_admin, routes_v1

    app.include_router(routes_v1.router)
    app.include_router(routes_admin.router)
    app.include_router(pages.router)
    _ops(app, settings)
    if _collector is None:
        _collector = DatabaseCollector()
        REGISTRY.register(_collector)
    return app


def _errors(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def service_error(request: Request, exc: ServiceError) -> Response:
        return _error(request, exc.status, exc.message)

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


def _access_log(app: FastAPI) -> None:
    access = logging.getLogger("memorace.api.access")

    @app.middleware("http")
    async def log_request(request: Request, call_next):  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        response = await call_next(request)
        access.info(
            "request",
            extra={
                "method": request.method,
                "path": request.url.path,
                "status": response.status_code,
                "ms": round((time.perf_counter() - start) * 1000, 1),
                "client": request.client.host if request.client else None,
            },
        )
        return response


def _error(request: Request, status: int, message: str) -> Response:
    from api.pages import error_page, wants_html

    if wants_html(request):
        return error_page(request, status, message)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse({"detail": message}, status_code=status, headers=headers)


def _ops(app: FastAPI, settings: Settings) -> None:
    @app.get("/healthz", tags=["ops"])
    def healthz() -> JSONResponse:
        checks: dict[str, Any] = {}
        try:
            with get_engine(settings.database_url).connect() as conn:
                conn.execute(text("SELECT 1"))
            checks["database"] = "ok"
        except Exception as exc:
            checks["database"] = f"error: {exc}"
        checks["queue"] = "ok" if queue.queue_ready() else "unreachable"
        healthy = all(v == "ok" for v in checks.values())
        return JSONResponse({"ok": healthy, **checks}, status_code=200 if healthy else 503)

    @app.get("/metrics", tags=["ops"])
    def metrics() -> Response:
        return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
