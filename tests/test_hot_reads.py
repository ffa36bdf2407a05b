"""api.routes.hot_reads: the leaderboard and the submission list answered from this process's
caches before FastAPI; byte for byte what the routes answer, and everything it cannot
decide alone (a web session, a query, a token not checked lately, anything odd) left
to the routes. Both backends, the in-process ASGI client."""

from __future__ import annotations

import string
import time
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from api.reads import readcache
from api.routes import hot_reads
from tests.test_read_scaling import client, contestant, judge, submit  # noqa: F401

LONG = 60.0
KEPT_HEADERS = ("etag", "cache-control", "content-type", "content-length", "x-next-before-id")


def _both(client, path, headers):  # noqa: F811
    """(the route's reply, the hot path's reply) of the same read."""
    before = hot_reads.served[0]
    route = client.get(path, headers={**headers, "Cookie": "other=1"})  # a cookie: the route
    assert hot_reads.served[0] == before
    client.cookies.clear()
    hot = client.get(path, headers=headers)
    assert hot_reads.served[0] == before + 1, "the second read was not answered from memory"
    return route, hot


def _same(a, b) -> None:
    assert (a.status_code, a.content) == (b.status_code, b.content)
    for name in KEPT_HEADERS:
        assert a.headers.get(name) == b.headers.get(name), name


def test_kept_answers_are_the_routes_own_bytes(client, monkeypatch):  # noqa: F811
    monkeypatch.setattr(readcache, "STALENESS_S", LONG)
    red = contestant(client, "red", "alice")
    for n in range(3):
        judge(submit(client, red, n), {"one": 1.0, "three": 0.5, "two": 0.25})
    _same(*_both(client, "/api/v1/submissions", red))
    route, hot = _both(client, "/api/v1/leaderboard/tiny", red)
    _same(route, hot)
    etag = {**red, "If-None-Match": hot.headers["etag"]}
    before = hot_reads.served[0]
    not_modified = client.get("/api/v1/leaderboard/tiny", headers=etag)
    assert not_modified.status_code == 304 and hot_reads.served[0] == before + 1
    assert not_modified.headers["etag"] == hot.headers["etag"]
    _same(*_both(client, "/api/v1/submissions", {}))  # the organizers' (the client's token)
    admin = client.headers.pop("Authorization")
    try:
        _same(*_both(client, "/api/v1/leaderboard/tiny", {}))  # nobody: the public board
    finally:
        client.headers["Authorization"] = admin


def test_what_it_cannot_decide_goes_to_the_routes(client, monkeypatch):  # noqa: F811
    monkeypatch.setattr(readcache, "STALENESS_S", LONG)
    red = contestant(client, "red", "alice")
    submit(client, red, 1)
    _both(client, "/api/v1/submissions", red)  # kept now
    before = hot_reads.served[0]
    asks = [
        ("/api/v1/submissions?limit=5", red, 200),  # the route reads the query
        ("/api/v1/submissions", {**red, "Cookie": "memorace_session=x"}, 200),
        ("/api/v1/submissions", {"Authorization": "Basic abc"}, 401),
        ("/api/v1/submissions", {"Authorization": "Bearer not-a-token"}, 401),
        ("/api/v1/submissions", {"Authorization": ""}, 401),
        ("/api/v1/leaderboard/nope", red, 404),
        ("/api/v1/leaderboard/", red, 404),
    ]
    for path, headers, status in asks:
        client.cookies.clear()
        assert client.get(path, headers=headers).status_code == status, path
    assert client.head("/api/v1/submissions", headers=red).status_code == 200
    assert hot_reads.served[0] == before


def test_another_team_never_gets_a_kept_page(client, monkeypatch):  # noqa: F811
    monkeypatch.setattr(readcache, "STALENESS_S", LONG)
    red, blue = contestant(client, "red", "alice"), contestant(client, "blue", "bob")
    submit(client, red, 1)
    _both(client, "/api/v1/submissions", red)
    client.cookies.clear()
    assert client.get("/api/v1/submissions", headers=blue).json() == []


HEADER = st.binary(max_size=80)
NAMES = st.sampled_from([b"authorization", b"cookie", b"if-none-match", b"x"])
TOKENISH = st.text(string.printable, max_size=60).map(lambda t: f"Bearer {t}".encode())


@settings(max_examples=300, deadline=None)
@given(
    method=st.sampled_from(["GET", "HEAD", "POST", "DELETE", "G\x00T"]),
    path=st.one_of(
        st.sampled_from(["/api/v1/submissions", "/api/v1/leaderboard/tiny", "/", "/problems/tiny"]),
        st.text(max_size=40).map(lambda t: "/api/v1/leaderboard/" + t),
        st.text(max_size=40).map(lambda t: "/problems/" + t),
        st.text(max_size=40).map(lambda t: f"/api/v1/submissions/{t}/events"),
    ),
    query=st.binary(max_size=20),
    headers=st.lists(
        st.tuples(NAMES, st.one_of(HEADER, TOKENISH)),
        max_size=4,
    ),
)
def test_any_request_is_answered_or_passed_on(method, path, query, headers) -> None:
    hot = hot_reads.HotReads(app=None, database_url="sqlite:///:memory:")  # type: ignore[arg-type]
    scope = {"type": "http", "method": method, "path": path, "query_string": query,
             "headers": headers}  # fmt: skip
    answer = hot._answer(scope)
    assert answer is None or answer[0] in (200, 304)


def test_a_token_s_page_sets_no_cookie_that_would_keep_its_reads_from_it(client, monkeypatch):  # noqa: F811
    """A page read with a token (curl, a script, a load test) gets no CSRF token and so
    no session cookie: its next reads still go the hot path. A browser's does."""
    monkeypatch.setattr(readcache, "STALENESS_S", LONG)
    red = contestant(client, "red", "alice")
    client.cookies.clear()
    page = client.get("/problems/tiny", headers=red)
    assert page.status_code == 200 and "set-cookie" not in page.headers
    assert "alice" in page.text and 'action="/logout"' not in page.text
    client.get("/api/v1/submissions", headers=red)  # kept now
    before = hot_reads.served[0]
    assert client.get("/api/v1/submissions", headers=red).status_code == 200
    assert hot_reads.served[0] == before + 1
    admin = client.headers.pop("Authorization")
    try:
        login = client.get("/login")  # a browser: the form needs its CSRF token
        assert login.status_code == 200 and "memorace_session" in login.headers["set-cookie"]
    finally:
        client.headers["Authorization"] = admin


def test_a_kept_problem_page_is_the_route_s_own_bytes(client, monkeypatch):  # noqa: F811
    """For a token's holder and for nobody; the CSP nonce is new on every answer."""
    monkeypatch.setattr(readcache, "STALENESS_S", LONG)
    red = contestant(client, "red", "alice")
    client.cookies.clear()
    client.get("/problems/tiny", headers=red)  # the route keeps the page's main part
    route, hot = _both(client, "/problems/tiny", red)
    _same(route, hot)
    assert "alice" in hot.text and "red" in hot.text
    nonces = set()
    for reply in (route, hot, client.get("/problems/tiny", headers=red)):
        before, _, after = reply.headers["content-security-policy"].partition("'nonce-")
        nonces.add(after.split("'")[0])
        assert before == route.headers["content-security-policy"].partition("'nonce-")[0]
        for name in ("x-content-type-options", "referrer-policy"):
            assert reply.headers[name] == route.headers[name]
    assert len(nonces) == 3
    admin = client.headers.pop("Authorization")
    try:
        client.get("/problems/tiny")
        _same(*_both(client, "/problems/tiny", {}))  # nobody
        assert "alice" not in client.get("/problems/tiny").text
    finally:
        client.headers["Authorization"] = admin


def test_a_repeated_header_is_read_as_the_routes_read_it(client, monkeypatch):  # noqa: F811
    """Two Authorization headers: the routes read the first (Starlette); the hot path
    read the last, so a request the routes refuse was answered as another token's."""
    monkeypatch.setattr(readcache, "STALENESS_S", LONG)
    red = contestant(client, "red", "alice")
    submit(client, red, 1)
    _both(client, "/api/v1/submissions", red)  # kept now
    twice = [("Authorization", "Bearer not-a-token"), ("Authorization", red["Authorization"])]
    for path in ("/api/v1/submissions", "/api/v1/leaderboard/tiny", "/problems/tiny"):
        client.cookies.clear()
        client.get(path, headers=red)  # kept for red
        reply = client.get(path, headers=twice)
        assert reply.status_code == (200 if path.startswith("/problems/") else 401), path
        assert "alice" not in reply.text  # a page: as nobody's, the route's way


def test_an_expired_token_gets_no_kept_answer(client, monkeypatch):  # noqa: F811
    """The token cache keeps the expiry: a kept answer stops at the expiry, not at the
    cache's TTL (a minute while the Redis news is heard)."""
    monkeypatch.setattr(readcache, "STALENESS_S", LONG)
    contestant(client, "red", "alice")
    until = (datetime.now(UTC) + timedelta(seconds=3)).isoformat()
    reply = client.post("/api/v1/admin/tokens", json={"username": "alice", "expires_at": until})
    red = {"Authorization": f"Bearer {reply.json()['token']}"}
    paths = ("/api/v1/submissions", "/api/v1/leaderboard/tiny", "/problems/tiny")
    for path in paths:
        _both(client, path, red)  # kept now, and answered from memory
    time.sleep(max(0.0, datetime.fromisoformat(until).timestamp() - time.time()) + 0.2)
    before = hot_reads.served[0]
    for path in paths:
        client.cookies.clear()
        reply = client.get(path, headers=red)
        assert "alice" not in reply.text and reply.status_code in (200, 401), path
    assert hot_reads.served[0] == before


def test_a_judged_submission_s_follow_is_the_stream_s_bytes(client, monkeypatch):  # noqa: F811
    """A follow of a judged submission (a client following the team's latest, mostly
    judged by then) is its whole stream from the kept view: no stream opened, no route.
    Another team's, a resume, or a view not kept: the route."""
    monkeypatch.setattr(readcache, "STALENESS_S", LONG)
    red, blue = contestant(client, "red", "alice"), contestant(client, "blue", "bob")
    sub = submit(client, red, 1)
    judge(sub, {"one": 1.0, "three": 0.5, "two": 0.25})
    path = f"/api/v1/submissions/{sub}/events"
    for who in (red, {}):  # a contestant's and the organizers' (the client's token)
        route, hot = _both(client, path, who)
        assert route.status_code == 200 and route.text.startswith("id: ")
        assert hot.content == route.content and "event: end" in hot.text
        assert hot.headers["content-type"] == route.headers["content-type"]
        assert hot.headers["cache-control"] == route.headers["cache-control"]
    before = hot_reads.served[0]
    assert client.get(path, headers=blue).status_code == 404  # another team's: the route
    resumed = client.get(path, headers={**red, "Last-Event-ID": f"{sub}:1"})
    assert resumed.status_code == 200 and hot_reads.served[0] == before
