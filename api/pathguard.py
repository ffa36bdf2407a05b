"""Refuse paths and queries that no route can answer, before they reach the database.

A NUL byte (PostgreSQL refuses it in a string: psycopg raised, a 500), a number past
64 bits in a path segment (an id: SQLite and PostgreSQL overflow, a 500) and very
long paths or queries are answered here: 404 for the path, 422 for the query.
"""

from __future__ import annotations

import re
from urllib.parse import unquote_to_bytes

from starlette.types import ASGIApp, Receive, Scope, Send

from api.bodylimit import refuse

MAX_PATH_CHARS = 2048
MAX_QUERY_BYTES = 8192
ID_MAX = 2**63 - 1  # the largest id a database column (BIGINT, SQLite INTEGER) holds
_NUMBER = re.compile(r"[+-]?\d+")


def path_problem(path: str) -> str:
    """Why no route of ours can answer `path` (already percent-decoded); "" if none."""
    if len(path) > MAX_PATH_CHARS:
        return f"no such page: the path is longer than {MAX_PATH_CHARS} characters"
    if "\x00" in path:
        return "no such page: the path holds a NUL character"
    for segment in path.split("/"):
        if _NUMBER.fullmatch(segment) and abs(int(segment)) > ID_MAX:
            return f"no such page: {segment[:40]} is past the largest id ({ID_MAX})"
    return ""


def query_problem(query: bytes) -> str:
    """Why the query string cannot be taken; "" if it can."""
    if len(query) > MAX_QUERY_BYTES:
        return f"the query string is longer than {MAX_QUERY_BYTES} bytes"
    if b"\x00" in unquote_to_bytes(query):
        return "the query string holds a NUL character"
    return ""


class PathGuard:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            if problem := path_problem(scope["path"]):
                await refuse(scope, send, 404, problem)
                return
            if problem := query_problem(scope.get("query_string", b"")):
                await refuse(scope, send, 422, problem)
                return
        await self.app(scope, receive, send)
