"""Every answer carries `X-Content-Type-Options: nosniff` and a Content-Security-Policy
(api.access.headers): an SVG and every download or export one that runs nothing and sandboxes
the document. The test walks every GET route of the app (a new route is checked the day
it is added), as an organizer, a contestant and nobody, and the answers api.routes.hot_reads
keeps; both backends, the in-process app with all its middlewares."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
from fastapi.testclient import TestClient

from api.actions import problems
from api.reads import readcache
from api.routes import hot_reads
from tests.test_api_hostile_input import ENDLESS
from tests.test_read_scaling import client, contestant, judge, submit  # noqa: F401

SCORES = {"one": 1.0, "three": 0.5, "two": 0.25}
# What each path parameter of the app's routes is filled with (the fixture's data).
VALUES = {"slug": "tiny", "case": "one", "name": "favicon.svg", "what": "standings",
          "username": "alice", "job_id": "1"}  # fmt: skip
# These must answer 200 with this content type (the downloads, exports and pictures).
DOWNLOADS = {
    "/api/v1/problems/tiny/history.svg": "image/svg+xml",
    "/api/v1/problems/tiny/history.svg?score=hidden_score": "image/svg+xml",
    "/static/favicon.svg": "image/svg+xml",
    "/api/v1/problems/tiny/starter-kit": "application/zip",
    "/api/v1/problems/tiny/cases/one": "text/csv",
    "/api/v1/problems/tiny/statement": "text/plain",
    "/api/v1/exports/mine?format=csv": "text/csv",
    "/api/v1/exports/mine?format=json": "application/json",
    **{
        f"/api/v1/admin/exports/{what}?format={fmt}": kind
        for what in ("standings", "results", "audit")
        for fmt, kind in (("csv", "text/csv"), ("json", "application/json"))
    },
    "/docs-assets/swagger-ui.css": "text/css",
}


def get_routes(client: TestClient) -> list[str]:  # noqa: F811
    """Every GET route's path template (FastAPI nests included routers)."""

    def walk(routes: list) -> Iterator:
        for route in routes:
            if hasattr(route, "original_router"):
                yield from walk(route.original_router.routes)
            else:
                yield route

    found = walk(client.app.routes)  # type: ignore[attr-defined]
    return sorted({r.path for r in found if "GET" in (getattr(r, "methods", None) or ())})


def check(reply: httpx.Response, path: str) -> None:
    headers = reply.headers
    where = (path, reply.status_code, dict(headers))
    assert headers.get("x-content-type-options") == "nosniff", where
    csp = headers.get("content-security-policy", "")
    kind = headers.get("content-type", "")
    assert csp, where
    if "text/html" in kind:
        return  # a page's own policy (api.pages.common, api.routes.docs), nonce and all
    assert "default-src 'none'" in csp and "sandbox" in csp, where
    assert "script-src" not in csp and "'unsafe-eval'" not in csp, where
    if "svg" not in kind:
        assert "style-src" not in csp, where


def test_every_answer_of_every_get_route_has_nosniff_and_a_policy(client) -> None:  # noqa: F811
    red = contestant(client, "red", "alice")
    sub = submit(client, red, 1)
    judge(sub, SCORES)  # judged: its event stream ends at once
    token_id = client.get("/api/v1/admin/tokens").json()[0]["id"]
    values = {**VALUES, "sub_id": str(sub), "token_id": str(token_id)}
    routes = get_routes(client)
    assert len(routes) >= 30 and "/api/v1/problems/{slug}/history.svg" in routes, routes
    nobody = TestClient(client.app)
    checked = 0
    for route in routes:
        if route in ENDLESS:  # never ends by itself (a submission's stream, its twin, is)
            continue
        path = re.sub(r"\{([^}]+)\}", lambda m: values.get(m.group(1), "1"), route)
        for who, headers in (("organizer", {}), ("contestant", red), ("nobody", None)):
            reply = (nobody if headers is None else client).get(path, headers=headers or {})
            assert reply.status_code < 500, (who, path, reply.status_code, reply.text[:300])
            check(reply, f"{who} {path}")
            checked += 1
    for path, kind in DOWNLOADS.items():
        organizer = "/admin/" in path or "hidden_score" in path
        reply = client.get(path, headers={} if organizer else red)
        assert reply.status_code == 200, (path, reply.status_code, reply.text[:300])
        assert reply.headers["content-type"].startswith(kind), (path, reply.headers)
        check(reply, path)
        if "svg" in kind:  # may style itself, nothing more
            assert "style-src 'unsafe-inline'" in reply.headers["content-security-policy"]
    print(f"{len(routes)} GET routes, {checked} answers and {len(DOWNLOADS)} downloads checked")


def test_answers_kept_by_the_hot_path_have_them_too(client, monkeypatch) -> None:  # noqa: F811
    monkeypatch.setattr(readcache, "STALENESS_S", 60.0)
    red = contestant(client, "red", "alice")
    judge(submit(client, red, 1), SCORES)
    paths = ["/api/v1/leaderboard/tiny", "/api/v1/submissions", "/problems/tiny"]
    for path in paths:
        client.get(path, headers={**red, "Cookie": "other=1"})  # the route fills the caches
        client.cookies.clear()
        before = hot_reads.served[0]
        hot = client.get(path, headers=red)
        assert hot_reads.served[0] == before + 1, f"{path} was not answered from memory"
        check(hot, path)
    etag = client.get(paths[0], headers=red).headers["etag"]
    not_modified = client.get(paths[0], headers={**red, "If-None-Match": etag})
    assert not_modified.status_code == 304
    check(not_modified, "304 " + paths[0])


def test_a_crash_answer_has_them_too(client, monkeypatch) -> None:  # noqa: F811
    """Starlette sends an unhandled exception's answer outside every middleware."""

    def crash(*_: object) -> None:
        raise RuntimeError("secret detail")

    monkeypatch.setattr(problems, "all_current", crash)
    raw = TestClient(client.app, raise_server_exceptions=False)
    raw.headers.update(client.headers)
    for accept in ("application/json", "text/html"):
        reply = raw.get("/problems", headers={"accept": accept})
        assert reply.status_code == 500 and "secret detail" not in reply.text
        check(reply, f"crash as {accept}")
