"""Headers on every answer, in one place, so that no route can forget them.

`X-Content-Type-Options: nosniff` always: a browser takes the declared type (a CSV, a
JSON export, a plan or a log is never sniffed into HTML). A Content-Security-Policy
wherever the route set none: an SVG (the score-history chart, the favicon) may style
itself and nothing more; anything else (downloads, exports, JSON, text) nothing at all.
Both sandbox the document, so that one opened in its own tab runs no script and has no
access to the site's origin. Pages keep their own policy (api.pages.common, api.routes.docs).

A redirect that Starlette makes absolute from the request's Host header (a missing or
extra trailing slash, /guide to /guide/) goes out as a path: a forged Host never becomes
a link to another site (a cache in front would keep it for everyone).

SecureHeaders wraps the app outside api.routes.hot_reads.HotReads: the answers kept there get
the same headers. Errors that Starlette answers outside every middleware (an unhandled
exception) get them from `secure` (api.app._error).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

NOSNIFF = "nosniff"
SVG_CSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; sandbox"
DOWNLOAD_CSP = "default-src 'none'; frame-ancestors 'none'; sandbox"
_TYPE_OPTIONS = b"x-content-type-options"
_CSP = b"content-security-policy"
_LOCATION = b"location"
_DROPPED = dict.fromkeys(map(ord, "\t\n\r"))
_LEADING = "".join(map(chr, range(33)))


def policy_for(content_type: str) -> str:
    """The policy of an answer whose route set none."""
    return SVG_CSP if "svg" in content_type.lower() else DOWNLOAD_CSP


def secured(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """`headers` (raw ASGI pairs) with nosniff, a policy where none was set, and an
    absolute Location made a path (and query): the service sends no one to another site,
    and Starlette's absolute ones name whatever Host was sent. One pass over them."""
    out, names, kind = [], set(), None
    for name, value in headers:
        low = name.lower()
        names.add(low)
        if low == b"content-type" and kind is None:
            kind = value
        out.append((name, _path_of(value) if low == _LOCATION else value))
    if _TYPE_OPTIONS not in names:
        out.append((_TYPE_OPTIONS, NOSNIFF.encode()))
    if _CSP not in names:
        out.append((_CSP, policy_for((kind or b"").decode("latin-1")).encode()))
    return out


def _path_of(location: bytes) -> bytes:
    # as a browser reads it: tabs and line breaks dropped, leading controls and spaces too
    text = location.decode("latin-1").translate(_DROPPED).lstrip(_LEADING)
    try:
        url = urlsplit(text)
    except ValueError:  # not a URL at all: nothing a browser would follow elsewhere
        return b"/"
    if url.scheme or url.netloc:
        path = _one_slash(url.path or "/")
        return (path + (f"?{url.query}" if url.query else "")).encode("latin-1")
    if text.startswith(("/", "\\")):
        return _one_slash(text).encode("latin-1")
    return text.encode("latin-1")


def _one_slash(path: str) -> str:
    """Never "//host" nor "/\\host" (browsers read both as another site): one slash."""
    return "/" + path.lstrip("/\\")


def secure(response: Response) -> Response:
    """The same for a response object (one sent outside the middleware)."""
    response.headers.setdefault("X-Content-Type-Options", NOSNIFF)
    kind = response.headers.get("content-type", "")
    response.headers.setdefault("Content-Security-Policy", policy_for(kind))
    return response


class SecureHeaders:
    """Adds the headers above to every HTTP answer's start."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": secured(list(message.get("headers", ())))}
            await send(message)

        await self.app(scope, receive, with_headers)
