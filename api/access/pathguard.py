"""Refuse paths and queries that no route can answer, before they reach the database.

A NUL byte (PostgreSQL refuses it in a string: psycopg raised, a 500), an integer path
parameter past the id columns' range (PostgreSQL INTEGER, 32 bits; SQLite overflows past
64: a 500) and very long paths, path parts or queries are answered here: 404 for the path, 422 for
the query. Which parameters are integers is read from the app's routes, so a numeric
slug or case name is never mistaken for an id.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import unquote_to_bytes

from starlette.types import ASGIApp, Receive, Scope, Send

from api.access.bodylimit import refuse

MAX_PATH_CHARS = 2048
MAX_QUERY_BYTES = 8192
# No name of ours is longer (slugs 64, case and user names 100), and no file name
# either: a longer one made the static files' lookup raise (ENAMETOOLONG, a 500).
MAX_SEGMENT_CHARS = 255
ID_MAX = 2**31 - 1  # the largest id the id columns hold (PostgreSQL INTEGER)
IntParams = list[tuple[re.Pattern[str], list[str]]]


def path_problem(path: str, int_params: IntParams) -> str:
    """Why no route of ours can answer `path` (already percent-decoded); "" if none."""
    if len(path) > MAX_PATH_CHARS:
        return f"no such page: the path is longer than {MAX_PATH_CHARS} characters"
    if "\x00" in path:
        return "no such page: the path holds a NUL character"
    if any(len(segment) > MAX_SEGMENT_CHARS for segment in path.split("/")):
        return f"no such page: a part of the path is longer than {MAX_SEGMENT_CHARS} characters"
    for pattern, names in int_params:
        if found := pattern.match(path):
            for name in names:
                if abs(_as_int(found.group(name))) > ID_MAX:
                    return f"no such page: {name} is past the largest id ({ID_MAX})"
    return ""


def _as_int(text: str) -> int:
    """The number a route would read (0 when it is none: the route answers 422)."""
    try:
        return int(text)
    except ValueError:
        return 0


def int_path_params(routes: Iterable[Any]) -> Iterator[tuple[re.Pattern[str], list[str]]]:
    """(path regex, its integer parameters) of every route that has some; FastAPI keeps
    an included router's routes below it."""
    for route in routes:
        if hasattr(route, "original_router"):
            yield from int_path_params(route.original_router.routes)
            continue
        dependant = getattr(route, "dependant", None)
        names = [
            p.name for p in getattr(dependant, "path_params", ()) if p.field_info.annotation is int
        ]
        if names:
            yield route.path_regex, names


def query_problem(query: bytes) -> str:
    """Why the query string cannot be taken; "" if it can."""
    if len(query) > MAX_QUERY_BYTES:
        return f"the query string is longer than {MAX_QUERY_BYTES} bytes"
    if b"\x00" in unquote_to_bytes(query):
        return "the query string holds a NUL character"
    return ""


class PathGuard:
    """`api` is the FastAPI app, whose routes are read at the first request (they are
    all included by then)."""

    def __init__(self, app: ASGIApp, api: Any) -> None:
        self.app = app
        self.api = api
        self.int_params: IntParams | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            if self.int_params is None:
                self.int_params = list(int_path_params(self.api.routes))
            if problem := path_problem(scope["path"], self.int_params):
                await refuse(scope, send, 404, problem)
                return
            if problem := query_problem(scope.get("query_string", b"")):
                await refuse(scope, send, 422, problem)
                return
        await self.app(scope, receive, send)
