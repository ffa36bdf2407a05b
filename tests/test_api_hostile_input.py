"""Hostile input the API must refuse cheaply and answer without a 500: oversized
bodies before anyone is asked who they are (over real HTTP), dates with an offset,
ids past 64 bits, NUL bytes (PostgreSQL refuses them), forged X-Forwarded-For, and
API writes riding a browser's session cookie.

The HTTP tests run the real service (uvicorn, SQLite); the rest run the app in-process
on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from api import queue
from api.settings import get_settings
from tests.service import (
    Service,
    answers,
    postgres_database,
    serve_script,
    small_package,
    start_service,
    wait_for,
)
from tests.test_package import make_package
from tests.test_upload_attacks import (
    BOUNDARY,
    chunked,
    files_under,
    multipart_stream,
    raw_post,
    written,
)

HUGE_ID = "9223372036854775808"  # 2**63: past SQLite's INTEGER
PG_ID = "2147483648"  # 2**31: past PostgreSQL's INTEGER (the id columns)


# --- over real HTTP: bodies before authentication ------------------------------------------


@pytest.fixture(scope="module")
def service(tmp_path_factory) -> Iterator[tuple[Service, Path]]:
    tmp = tmp_path_factory.mktemp("hostile")
    scratch = tmp / "tmp"
    scratch.mkdir()
    service = start_service(tmp, [small_package(tmp)], extra_env={"TMPDIR": str(scratch)})
    try:
        yield service, scratch
    finally:
        service.stop()


def rss(service: Service) -> int:
    status = Path(f"/proc/{service.procs['api'].pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) * 1024  # type: ignore[union-attr]


def json_stream(total: int) -> Iterator[bytes]:
    yield b'{"name": "'
    block = b"x" * 2**20
    for _ in range(total // len(block)):
        yield block
    yield b'"}'


JSON_HEADERS = {"Content-Type": "application/json"}
# An organizer's JSON route (any would do: FastAPI reads the body before the login check).
ADMIN_JSON_ROUTE = "/api/v1/admin/teams"


def test_an_anonymous_huge_json_body_is_refused_before_it_is_read(service):
    service, _ = service
    size = 512 * 2**20
    before = rss(service)
    headers = {**JSON_HEADERS, "Content-Length": str(size + 13)}
    status, text, seconds, _ = post(service, ADMIN_JSON_ROUTE, headers, json_stream(size))
    assert status == 413, (status, text)
    assert "more than 262144 bytes" in text, text
    print(f"refused after {seconds:.2f} s")  # a figure: the byte and memory caps are the test
    assert rss(service) - before < 50 * 2**20


def test_a_chunked_json_body_is_cut_at_the_limit(service):
    service, _ = service
    before = rss(service)
    headers = {**JSON_HEADERS, "Transfer-Encoding": "chunked"}
    status, text, seconds, sent = post(
        service, ADMIN_JSON_ROUTE, headers, chunked(json_stream(512 * 2**20))
    )
    assert status == 413, (status, text)
    assert sent < 64 * 2**20, (seconds, sent)
    print(f"refused after {seconds:.2f} s, {sent} bytes sent")
    assert rss(service) - before < 50 * 2**20


@pytest.mark.parametrize("chunks", [False, True], ids=["length", "chunked"])
def test_a_gigabyte_file_to_a_page_form_writes_nothing(service, chunks):
    """/logout (any page form) without a CSRF token: refused, and no temporary file."""
    service, scratch = service
    before, tmp_before = written(service), files_under(scratch)
    headers = {
        "Content-Type": f"multipart/form-data; boundary={BOUNDARY}",
        "Accept": "text/html",
    }
    body = multipart_stream(2**30)
    if chunks:
        headers["Transfer-Encoding"] = "chunked"
        body = chunked(body)
    else:
        headers["Content-Length"] = str(2**30 + 300)
    status, text, seconds, _ = post(service, "/logout", headers, body)
    # By its length: 413 at once. Chunked: the form parser refuses the file part (400,
    # "too many files": a page form takes none), or the cap cuts it (413).
    assert status == 413 or (chunks and status == 400), (status, text[:300])
    assert text.startswith("<!doctype html>"), text[:300]
    print(f"refused after {seconds:.2f} s")
    assert written(service) - before < 2**20, "the API wrote the body somewhere"
    assert files_under(scratch) == tmp_before


def test_small_bodies_and_uploads_still_pass(service):
    service, _ = service
    reply = service.api("PUT", "/api/v1/admin/contest", json={"title": "x" * 100_000})
    assert reply.status_code == 200, reply.text
    token = service.add_team("uploaders", "uploader")
    reply = service.api(
        "POST", "/api/v1/submissions", token, data={"problem": "mini-gpt2"},
        files={"file": ("p.py", b"#" * 2**20 + b"\nprint(1)\n")},
    )  # fmt: skip
    assert reply.status_code == 201, reply.text  # 1 MiB: past the body cap, an upload


def post(service: Service, path: str, headers: dict[str, str], body: Iterator[bytes]):
    return raw_post(service, path, headers, body, within=30)


# --- in-process, on SQLite and PostgreSQL -----------------------------------------------


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def app(request, tmp_path_factory) -> Iterator[tuple[TestClient, str]]:
    """(a client with the organizer's token, the database kind)."""
    tmp = tmp_path_factory.mktemp(f"hostile-{request.param}")
    with ExitStack() as stack, pytest.MonkeyPatch.context() as env:
        env.setenv("MEMORACE_DATA_DIR", str(tmp / "data"))
        if request.param == "postgres":
            env.setenv("MEMORACE_DATABASE_URL", stack.enter_context(postgres_database()))
        get_settings.cache_clear()
        queue.producer.cache_clear()
        from api.app import create_app
        from api.bootstrap import bootstrap

        token = bootstrap(get_settings(), "admin", [make_package(tmp / "pkg")])
        client = stack.enter_context(TestClient(create_app()))
        client.headers["Authorization"] = f"Bearer {token}"
        body = {"username": "root2", "password": "root2-password", "admin": True}
        assert client.post("/api/v1/admin/users", json=body).status_code == 201
        yield client, request.param
        get_settings.cache_clear()
        queue.producer.cache_clear()


def browser(client: TestClient, username: str, password: str) -> tuple[TestClient, str]:
    """A cookie-only client of the same app, logged in; (client, the page's CSRF token)."""
    web = TestClient(client.app)
    page = web.get("/login")
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
    form = {"csrf_token": csrf, "username": username, "password": password}
    assert web.post("/login", data=form, follow_redirects=False).status_code == 303
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', web.get("/").text).group(1)  # type: ignore[union-attr]
    return web, csrf


def stamp(value: str) -> datetime:
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def test_a_token_expiry_with_an_offset_is_kept_in_utc(app):
    client, _ = app
    assert client.post("/api/v1/admin/teams", json={"name": "tz"}).status_code == 201
    body = {"username": "tz-user", "password": "tz-password", "team": "tz"}
    assert client.post("/api/v1/admin/users", json=body).status_code == 201
    moment = (datetime.now(UTC) + timedelta(hours=1)).astimezone(timezone(timedelta(hours=-10)))
    reply = client.post(
        "/api/v1/admin/tokens", json={"username": "tz-user", "expires_at": moment.isoformat()}
    )
    assert reply.status_code == 201, reply.text
    assert abs(stamp(reply.json()["expires_at"]) - moment) < timedelta(seconds=1)
    mine = {"Authorization": f"Bearer {reply.json()['token']}"}
    assert client.get("/api/v1/me", headers=mine).status_code == 200
    listed = client.get("/api/v1/admin/tokens", params={"username": "tz-user"}).json()
    assert abs(stamp(listed[0]["expires_at"]) - moment) < timedelta(seconds=1)
    assert listed[0]["expired"] is False


def test_contest_dates_with_an_offset_are_kept_in_utc(app):
    client, _ = app
    body = {"start_at": "2030-01-01T20:00:00+02:00", "end_at": "2030-01-02T20:00:00"}
    assert client.put("/api/v1/admin/contest", json=body).status_code == 200
    contest = client.get("/api/v1/admin/contest").json()
    assert stamp(contest["start_at"]) == datetime(2030, 1, 1, 18, tzinfo=UTC)
    assert stamp(contest["end_at"]) == datetime(2030, 1, 2, 20, tzinfo=UTC)  # naive = UTC
    # The organizer's form: a datetime-local field has no offset; one with it converts.
    web, csrf = browser(client, "root2", "root2-password")
    form = {"csrf_token": csrf, "title": "t", "start_at": "2030-03-01T20:00-05:00",
            "end_at": "2030-03-02T20:00", "freeze_at": ""}  # fmt: skip
    assert web.post("/admin/contest", data=form, follow_redirects=False).status_code == 303
    contest = client.get("/api/v1/admin/contest").json()
    assert stamp(contest["start_at"]) == datetime(2030, 3, 2, 1, tzinfo=UTC)
    assert stamp(contest["end_at"]) == datetime(2030, 3, 2, 20, tzinfo=UTC)
    assert client.put("/api/v1/admin/contest", json={"start_at": None, "end_at": None}).is_success


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", f"/api/v1/submissions/{HUGE_ID}"),
        ("GET", f"/api/v1/submissions/{HUGE_ID}/events"),
        ("GET", f"/api/v1/submissions/-{HUGE_ID}0"),
        ("GET", f"/api/v1/submissions/{PG_ID}"),
        ("GET", f"/submissions/{PG_ID}/live"),
        ("POST", f"/admin/tokens/{PG_ID}/revoke"),
        ("GET", f"/api/v1/admin/imports/{PG_ID}"),
        ("GET", f"/submissions/{HUGE_ID}"),
        ("GET", f"/api/v1/admin/imports/{HUGE_ID}"),
        ("DELETE", f"/api/v1/admin/tokens/{HUGE_ID}"),
        ("DELETE", f"/api/v1/tokens/{HUGE_ID}"),
        ("GET", "/api/v1/problems/%00"),
        ("GET", "/api/v1/leaderboard/%00"),
        ("GET", "/problems/a%00b/leaderboard"),
        ("GET", "/api/v1/admin/tokens?username=%00"),
        ("GET", "/api/v1/problems/" + "x" * 5000),
        ("GET", "/static/" + "x" * 300),
    ],
)
def test_ids_past_64_bits_and_nul_bytes_are_not_server_errors(app, method, path):
    client, _ = app
    reply = client.request(method, path)
    assert reply.status_code in (404, 422), (reply.status_code, reply.text[:300])


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/api/v1/admin/teams", {"name": "a\x00"}),
        ("POST", "/api/v1/admin/users", {"username": "a\x00", "password": "long-enough"}),
        ("POST", "/api/v1/admin/tokens", {"username": "a\x00"}),
        ("PUT", "/api/v1/admin/contest", {"title": "a\x00"}),
        ("POST", "/api/v1/admin/rejudge", {"team": "a\x00"}),
    ],
)
def test_nul_bytes_in_json_bodies_are_refused(app, method, path, body):
    client, _ = app
    reply = client.request(method, path, json=body)
    assert reply.status_code == 422, (reply.status_code, reply.text[:300])
    assert "NUL" in reply.json()["detail"]


def test_nul_bytes_in_page_forms_are_refused(app):
    client, _ = app
    web, csrf = browser(client, "root2", "root2-password")
    reply = web.post(
        "/admin/teams", data={"csrf_token": csrf, "name": "a\x00"}, headers={"Accept": "text/html"}
    )
    assert reply.status_code == 422, (reply.status_code, reply.text[:300])


def get_routes(client: TestClient) -> list[str]:
    """Every GET route's path template (FastAPI nests included routers)."""
    app = (getattr(client.app, "routes", None) and client.app) or client.app.app  # type: ignore[attr-defined]

    def walk(routes: list) -> Iterator:
        for route in routes:
            if hasattr(route, "original_router"):
                yield from walk(route.original_router.routes)
            else:
                yield route

    return sorted(r.path for r in walk(app.routes) if "GET" in (getattr(r, "methods", None) or ()))


def encode(value: str) -> str:
    return quote(value.encode("utf-8", "surrogatepass"), safe="")


SEGMENTS = st.one_of(
    st.text(min_size=1, max_size=40),
    st.binary(min_size=1, max_size=20).map(lambda b: b.decode("latin-1")),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.sampled_from([2**31 - 1, 2**31, -(2**31) - 1, 2**63 - 1, 2**63]).map(str),
    st.sampled_from(["\x00", "a\x00", HUGE_ID, "1" * 400, "..", "%", "0", "1e9", " 1"]),
)


# Streams that never end by themselves (a blocking client would wait minutes): they have
# no path parameter to fuzz; tests/test_clarifications.py reads them.
ENDLESS = {"/api/v1/contest/events"}


def test_fuzzed_path_segments_of_every_get_route_are_never_a_500(app):
    """On both backends: PostgreSQL refuses NUL bytes and ids past 32 bits, SQLite
    overflows past 64."""
    client, _ = app
    routes = [r for r in get_routes(client) if r not in ENDLESS]
    assert sum("{" in r for r in routes) >= 10, routes

    @hypothesis_settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
    @given(route=st.sampled_from(routes), values=st.lists(SEGMENTS, min_size=4, max_size=4),
           query=SEGMENTS)  # fmt: skip
    def probe(route: str, values: list[str], query: str) -> None:
        parts = iter(values)
        path = re.sub(r"\{[^}]+\}", lambda _: encode(next(parts)), route)
        reply = client.get(f"{path}?username={encode(query)}&limit=3")
        assert reply.status_code < 500, (path, reply.status_code, reply.text[:300])

    probe()


# --- CSRF on cookie-authenticated API writes ------------------------------------------------


def test_an_api_write_with_only_the_session_cookie_needs_the_csrf_header(app):
    client, _ = app
    web, csrf = browser(client, "root2", "root2-password")
    made = client.post("/api/v1/admin/tokens", json={"username": "root2", "name": "victim"})
    token_id = client.get("/api/v1/admin/tokens", params={"username": "root2"}).json()[0]["id"]
    assert made.status_code == 201
    assert web.get("/api/v1/tokens").status_code == 200  # reading is fine
    refused = web.delete(f"/api/v1/tokens/{token_id}")
    assert refused.status_code == 403, refused.text
    assert "X-CSRF-Token" in refused.json()["detail"]
    wrong = web.delete(f"/api/v1/tokens/{token_id}", headers={"X-CSRF-Token": "guess"})
    assert wrong.status_code == 403
    listed = client.get("/api/v1/admin/tokens", params={"username": "root2"}).json()
    assert listed[0]["revoked"] is False
    right = web.delete(f"/api/v1/tokens/{token_id}", headers={"X-CSRF-Token": csrf})
    assert right.status_code == 200, right.text


# --- scripts/serve: X-Forwarded-For -------------------------------------------------------


def test_scripts_serve_does_not_take_a_forged_forwarded_address(tmp_path):
    with serve_script(tmp_path) as (url, data):
        wait_for(lambda: answers(url), 120, "scripts/serve's API")
        with httpx.Client(base_url=url, timeout=30) as web:
            page = web.get("/login")
            csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
            form = {"csrf_token": csrf, "username": "admin", "password": "wrong"}
            reply = web.post("/login", data=form, headers={"X-Forwarded-For": "9.9.9.9"})
            assert reply.status_code == 401, reply.text[:300]
    with sqlite3.connect(data / "db.sqlite") as db:
        keys = {k for (k,) in db.execute("SELECT key FROM login_throttle")}
    assert "addr:127.0.0.1" in keys and "addr:9.9.9.9" not in keys, keys
