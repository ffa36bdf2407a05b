"""Server-rendered web pages (Jinja2). Placeholder: being built out."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

router = APIRouter(include_in_schema=False)


def wants_html(request: Request) -> bool:
    """Browsers asking for a page get an HTML error; API clients get JSON."""
    return not request.url.path.startswith("/api/") and "text/html" in request.headers.get(
        "accept", ""
    )


def error_page(request: Request, status: int, message: str) -> Response:
    from html import escape

    return HTMLResponse(f"<h1>{status}</h1><p>{escape(message)}</p>", status_code=status)
