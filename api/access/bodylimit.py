"""A cap on request bodies, before anything reads them.

FastAPI reads a JSON or form body before a route's dependencies say who is asking:
without this, an anonymous 512 MiB JSON body was read whole (and a multipart file part
spooled to disk) before the 401 or the CSRF refusal. Every request but the upload
routes (which read their own body after the login check, with their own streaming
caps: api.access.uploads) gets at most MEMORACE_BODY_LIMIT_BYTES: a larger Content-Length is
answered 413 at once, nothing read; a chunked body is counted and cut at the limit.
"""

from __future__ import annotations

import json
import os
from html import escape as html_escape
from http import HTTPStatus

from fastapi.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

DEFAULT_LIMIT_BYTES = 256 * 1024
# The routes that stream an upload themselves (api.access.uploads.read_upload).
UPLOAD_ROUTES = frozenset(
    {
        ("POST", "/api/v1/submissions"),
        ("POST", "/api/v1/admin/problems"),
        ("POST", "/submit"),
        ("POST", "/admin/problems"),
    }
)


def body_limit() -> int:
    """MEMORACE_BODY_LIMIT_BYTES, default 256 KiB: room for any JSON call or page form."""
    return int(os.environ.get("MEMORACE_BODY_LIMIT_BYTES") or DEFAULT_LIMIT_BYTES)


def too_large_message(limit: int) -> str:
    return (
        f"the request body is more than {limit} bytes, the most this route takes "
        "(files go to the upload routes)"
    )


class BodyLimit:
    """Pure ASGI (no buffering): refuses by Content-Length, else counts what is read."""

    def __init__(self, app: ASGIApp, limit: int | None = None) -> None:
        self.app = app
        self.limit = body_limit() if limit is None else limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (scope["method"], scope["path"]) in UPLOAD_ROUTES:
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.limit:
            await refuse(scope, send, 413, too_large_message(self.limit))
            return
        await self.app(scope, self._counting(receive), send)

    def _counting(self, receive: Receive) -> Receive:
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            if seen > self.limit:  # asked again after the refusal: still refused
                raise HTTPException(413, too_large_message(self.limit))
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    # Raised where the body is read (FastAPI's parsing, request.form()):
                    # the app's error handlers answer 413, nothing more is read.
                    raise HTTPException(413, too_large_message(self.limit))
            return message

        return counted


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else None  # h11 refuses a bad one itself
    return None


async def refuse(scope: Scope, send: Send, status: int, message: str) -> None:
    """An error in the API's shape, from outside the app: JSON for /api/ and API
    clients, a short page for browsers (nothing of the request is read)."""
    headers = dict(scope["headers"])
    accept = headers.get(b"accept", b"").decode("latin-1")
    html = not scope["path"].startswith("/api/") and ("text/html" in accept or "json" not in accept)
    if html:
        title = f"{status} {HTTPStatus(status).phrase}"
        body = f"<!doctype html><meta charset=utf-8><title>{title}</title><h1>{title}</h1>"
        body += f"<p>{html_escape(message)}</p>"
        payload, kind = body.encode(), b"text/html; charset=utf-8"
    else:
        payload, kind = json.dumps({"detail": message}).encode(), b"application/json"
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", kind),
                (b"content-length", str(len(payload)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
