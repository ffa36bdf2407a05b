"""The hottest reads answered from this process's caches before FastAPI sees them.

On a contest day most requests are the leaderboard, a team's submission list, the
problem page and a follow of the team's latest submission (mostly judged by then), and
most of those are answered from api.reads.readcache; routing, dependency solving and the
middlewares cost several times what the cached answer does (measured: the framework
was the largest part of a cached read's CPU). HotReads answers such a request itself
when everything it needs is in this process's memory: the token recently checked
(api.access.tokencache, the same freshness rule the routes use), the board's snapshot and the
encoded answer. Anything else goes on to the app unchanged: a cookie (a browser's web
session), a query string, a token not seen lately or due its last-use stamp, an
answer not kept. So the answers are byte for byte the routes' own (a page's CSP nonce
is new each time, as the route's).

It sits outside api.access.inflight.InFlight: a kept answer holds no database connection;
and inside api.access.headers.SecureHeaders: a kept answer gets nosniff and a policy too.
"""

from __future__ import annotations

import secrets
from collections.abc import Hashable

from starlette.types import ASGIApp, Receive, Scope, Send

from api.access import tokencache
from api.access.auth import is_stale, token_hash
from api.access.caller import Caller
from api.live.events import STREAM_HEADERS, whole_stream
from api.live.views import CONTESTANT, ORGANIZER, final_key
from api.numbers import plain_id
from api.pages.common import CSP, SECURE_HEADERS
from api.pages.problem import known_page
from api.reads import readcache
from api.reads.leaderboard import known_board_at
from api.routes.v1 import DEFAULT_PAGE, list_key

BOARD_PREFIX = "/api/v1/leaderboard/"
LIST_PATH = "/api/v1/submissions"
PAGE_PREFIX = "/problems/"
EVENTS_SUFFIX = "/events"
FOLLOW_HEADERS = [  # as api.live.events.EventStream sets them (its body is chunked instead)
    (b"content-type", b"text/event-stream; charset=utf-8"),
    *((k.lower().encode(), v.encode()) for k, v in STREAM_HEADERS.items()),
]
PAGE_HEADERS = [  # as api.pages.common.render sets them, the CSP apart
    (b"content-type", b"text/html; charset=utf-8"),
    *((k.lower().encode(), v.encode()) for k, v in SECURE_HEADERS.items()),
]
Answer = tuple[int, list[tuple[bytes, bytes]], bytes]  # status, headers, body
served = [0]  # answers given here, per process (tests, benchmarks)


class HotReads:
    def __init__(self, app: ASGIApp, database_url: str) -> None:
        from api.db.session import get_engine

        self.app = app
        url = get_engine(database_url).url
        self.database: Hashable = url  # as readcache.database() keys it
        self.token_db = str(url)  # as tokencache keys it
        self.database_url = database_url  # as the broadcaster keys kept views

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        answer = self._answer(scope) if scope["type"] == "http" else None
        if answer is None:
            await self.app(scope, receive, send)
            return
        served[0] += 1
        status, headers, body = answer
        if status != 304:
            headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def _answer(self, scope: Scope) -> Answer | None:
        if scope["method"] != "GET":
            return None
        path: str = scope["path"]
        board, page = path.startswith(BOARD_PREFIX), path.startswith(PAGE_PREFIX)
        follow = path.startswith(LIST_PATH + "/") and path.endswith(EVENTS_SUFFIX)
        if scope["query_string"] or not (board or page or follow or path == LIST_PATH):
            return None
        headers = dict(reversed(scope["headers"]))  # a repeated one: the first, as Starlette
        if b"cookie" in headers:
            return None  # a web session decides who asks: the routes know how
        caller = self._caller(headers.get(b"authorization"))
        if caller is False or (caller is None and not (board or page)):
            return None
        if board:
            return self._board(path[len(BOARD_PREFIX) :], caller, headers)  # type: ignore[arg-type]
        if page:
            return self._page(path[len(PAGE_PREFIX) :], caller)  # type: ignore[arg-type]
        if follow:
            return self._follow(path[len(LIST_PATH) + 1 : -len(EVENTS_SUFFIX)], caller, headers)  # type: ignore[arg-type]
        return self._list(caller)  # type: ignore[arg-type]

    def _caller(self, header: bytes | None) -> Caller | bool | None:
        """The caller from a recently checked token; None: nobody; False: ask the app."""
        if header is None:
            return None
        scheme, _, token = header.decode("latin-1").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return False  # the app says what is wrong with it
        entry = tokencache.lookup_at((self.token_db, token_hash(token.strip())))
        if entry is None or is_stale(entry.last_used_at):
            return False  # to be checked, or its last use written: the app does it
        return Caller.of_entry(entry)

    def _board(self, slug: str, caller: Caller | None, headers: dict) -> Answer | None:
        if not slug or "/" in slug:
            return None
        found = known_board_at(self.database, slug, caller)
        if found is None:
            return None
        etag = found.etag.encode()
        out = [(b"etag", etag), (b"cache-control", b"private, no-cache")]
        if etag in headers.get(b"if-none-match", b""):
            return 304, out, b""
        return 200, [*out, (b"content-type", b"application/json")], found.encoded

    def _page(self, slug: str, caller: Caller | None) -> Answer | None:
        if not slug or "/" in slug:
            return None
        body = known_page(self.database, slug, caller)
        if body is None:
            return None
        csp = CSP.format(nonce=secrets.token_urlsafe(16)).encode()
        return 200, [*PAGE_HEADERS, (b"content-security-policy", csp)], body

    def _list(self, caller: Caller) -> Answer | None:
        key, _ = list_key(self.database, caller, DEFAULT_PAGE, None)
        page = readcache.get(key)
        if page is None:
            return None
        body, more = page
        extra = [(k.lower().encode(), v.encode()) for k, v in more.items()]
        return 200, [(b"content-type", b"application/json"), *extra], body

    def _follow(self, sub_id: str, caller: Caller, headers: dict) -> Answer | None:
        """A judged submission's whole stream, from its kept final view: a stream that
        would end at once is not opened. A resume (Last-Event-ID) goes to the route."""
        number = plain_id(sub_id)
        if b"last-event-id" in headers or number is None:
            return None
        cls = ORGANIZER if caller.is_admin else CONTESTANT
        view = readcache.get(final_key(self.database_url, number, cls))
        if view is None or not (caller.is_admin or view.team == caller.team_id):
            return None  # not kept, or another team's: the route says 404
        return 200, list(FOLLOW_HEADERS), whole_stream(view).encode()
