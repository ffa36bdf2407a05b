"""Attacks on logins, tokens, web sessions and /metrics, as an attacker would run them:
over real HTTP against the real service on both backends (SQLite with the embedded
broker; PostgreSQL with Redis). Login thresholds are lowered through their settings so
that this runs in seconds; each test speaks from its own loopback address (127.0.0.x),
so that the per-address counts of one test do not reach another.
"""

from __future__ import annotations

import asyncio
import re
import statistics
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from hypothesis import HealthCheck, example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from api.access.auth import hash_password
from api.access.login import Result, attempt
from api.db.models import User
from api.db.session import migrate, session_scope
from api.settings import Settings
from tests.service import Service, small_package, start_service
from tests.test_service_e2e import backends

PROBLEM = "mini-gpt2"
LOCK_AFTER = 5  # per account
ADDR_LOCK_AFTER = 12
LOCK_S = 120
THROTTLE = {
    "MEMORACE_LOGIN_FREE_FAILURES": "2",
    "MEMORACE_LOGIN_LOCK_AFTER": str(LOCK_AFTER),
    "MEMORACE_LOGIN_ADDR_FREE_FAILURES": "6",
    "MEMORACE_LOGIN_ADDR_LOCK_AFTER": str(ADDR_LOCK_AFTER),
    "MEMORACE_LOGIN_BACKOFF_S": "0.01",
    "MEMORACE_LOGIN_LOCK_S": str(LOCK_S),
    "MEMORACE_LOGIN_HASHES": "2",
    "MEMORACE_LOGIN_HASH_WAIT_S": "3",
}


@pytest.fixture(scope="module", params=["postgres+redis", "embedded"])
def service(request, tmp_path_factory) -> Iterator[Service]:
    """The API alone (nothing here is judged): bootstrap, problems, an organizer."""
    tmp = tmp_path_factory.mktemp("auth")
    with backends(request.param) as (db_url, broker_url):
        service = start_service(
            tmp, [small_package(tmp)], database_url=db_url, broker_url=broker_url,
            extra_env=THROTTLE,
        )  # fmt: skip
        try:
            yield service
        finally:
            service.stop()


def client(service: Service, address: str) -> httpx.Client:
    """A browser-like client speaking from `address` (any 127.x address is loopback)."""
    transport = httpx.HTTPTransport(local_address=address)
    return httpx.Client(base_url=service.url, transport=transport, timeout=60)


def login(c: httpx.Client, username: str, password: str, **headers: str) -> httpx.Response:
    page = c.get("/login")
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert token, page.text[:300]
    form = {"csrf_token": token.group(1), "username": username, "password": password}
    return c.post("/login", data=form, headers=headers, follow_redirects=False)


def user(service: Service, name: str) -> str:
    """A contestant with password '<name>-password' in a team of their own; their token."""
    return service.add_team(f"team-{name}", name)


def audit(service: Service, action: str) -> list[dict]:
    entries = service.api("GET", "/api/v1/admin/audit").json()
    return [e for e in entries if e["action"] == action]


# --- password guessing ----------------------------------------------------------------------


def test_guessing_a_password_locks_the_account_for_a_while(service: Service) -> None:
    token = user(service, "victim")
    user(service, "bystander")
    with client(service, "127.0.0.2") as attacker:
        statuses = [login(attacker, "victim", f"guess-{i}").status_code for i in range(30)]
        right = login(attacker, "victim", "victim-password")
        as_json = login(attacker, "victim", "victim-password", accept="application/json")
    print(f"30 guesses: {statuses.count(401)} checked (401), {statuses.count(429)} refused (429)")
    assert set(statuses) <= {401, 429} and statuses[0] == 401
    assert statuses.count(401) <= LOCK_AFTER  # no more passwords were even checked
    # The right password no longer helps: the account is locked, for a while only.
    assert right.status_code == 429, right.text[:300]
    assert 0 < int(right.headers["retry-after"]) <= LOCK_S
    assert "too many failed logins" in right.text
    assert as_json.status_code == 429 and "try again in" in as_json.json()["detail"]
    with client(service, "127.0.0.3") as elsewhere:  # per account, from any address
        assert login(elsewhere, "victim", "victim-password").status_code == 429
        assert login(elsewhere, "bystander", "bystander-password").status_code == 303
    locks = [e for e in audit(service, "login_locked") if e["target"] == "victim"]
    assert locks and locks[0]["detail"]["address"] == "127.0.0.2"
    # A lock stops password logins only: the victim's token still works.
    assert service.api("GET", "/api/v1/me", token).status_code == 200


def test_guessing_across_accounts_locks_the_address(service: Service) -> None:
    user(service, "neighbour")
    with client(service, "127.0.0.4") as attacker:
        statuses: list[int] = []  # one guess per account; refused ones (backoff) are fast
        while statuses.count(401) < ADDR_LOCK_AFTER and len(statuses) < 400:
            statuses.append(login(attacker, f"nobody-{len(statuses)}", "guess").status_code)
        right = login(attacker, "neighbour", "neighbour-password")
    assert statuses.count(401) == ADDR_LOCK_AFTER and 429 in statuses
    assert right.status_code == 429  # this address is locked, whatever the account
    with client(service, "127.0.0.5") as elsewhere:
        assert login(elsewhere, "neighbour", "neighbour-password").status_code == 303
    locks = audit(service, "login_locked")
    assert any(e["target"] == "address 127.0.0.4" for e in locks), locks


def _memory_kib(pid: int) -> dict[str, int]:
    """VmRSS (now) and VmHWM (the peak so far) of a process, in KiB."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0])
    return values


def test_a_login_flood_keeps_memory_bounded_and_the_leaderboard_fast(service: Service) -> None:
    """40 anonymous logins at once, each from its own address (so no throttle helps):
    the API's resident memory stays bounded and a leaderboard reader is still served."""
    pid = service.procs["api"].pid
    board = f"/api/v1/leaderboard/{PROBLEM}"
    with client(service, "127.0.0.6") as reader:

        def read() -> float:
            start = time.perf_counter()
            assert reader.get(board).status_code == 200
            return time.perf_counter() - start

        quiet = statistics.median([read() for _ in range(10)])
        before = _memory_kib(pid)
        done = threading.Event()
        peak = [before["VmRSS"]]

        def watch() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], _memory_kib(pid)["VmRSS"])
                time.sleep(0.01)

        def anonymous(i: int) -> int:
            with client(service, f"127.0.1.{i + 1}") as c:
                return login(c, f"anon-{i}", "x" * 64).status_code

        watcher = threading.Thread(target=watch)
        watcher.start()
        with ThreadPoolExecutor(40) as pool:
            futures = [pool.submit(anonymous, i) for i in range(40)]
            busy = []
            while not all(f.done() for f in futures):
                busy.append(read())
            statuses = [f.result() for f in futures]
        done.set()
        watcher.join()
    after = _memory_kib(pid)
    rise_mib = (max(peak[0], after["VmHWM"]) - before["VmRSS"]) / 1024
    loaded = statistics.median(busy) if busy else read()
    print(
        f"40 parallel logins: RSS {before['VmRSS'] / 1024:.0f} MiB before, peak rise "
        f"{rise_mib:.0f} MiB (VmHWM {after['VmHWM'] / 1024:.0f} MiB); leaderboard median "
        f"{quiet * 1000:.0f} ms quiet, {loaded * 1000:.0f} ms during ({len(busy)} reads); "
        f"statuses {sorted(set(statuses))}: {statuses.count(503)} x 503"
    )
    assert set(statuses) <= {401, 503} and statuses.count(401) >= 2
    assert rise_mib < 200  # 2 hashes of 19 MiB at once; unbounded, 40 x 64 MiB
    assert loaded < max(1.5, 20 * quiet)


# --- web sessions -------------------------------------------------------------------------


def test_logout_ends_the_session_even_for_a_replayed_cookie(service: Service) -> None:
    user(service, "leaver")
    with client(service, "127.0.0.7") as browser:
        assert login(browser, "leaver", "leaver-password").status_code == 303
        cookie = browser.cookies["memorace_session"]
        assert browser.get("/api/v1/me").json()["username"] == "leaver"
        page = browser.get("/submissions")
        token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
        assert token
        out = browser.post("/logout", data={"csrf_token": token.group(1)})
        assert out.status_code == 303
    with client(service, "127.0.0.7") as replay:
        replay.cookies.set("memorace_session", cookie)
        assert replay.get("/api/v1/me").status_code == 401
        assert replay.get("/submissions").status_code == 303  # to the login form


# --- tokens -------------------------------------------------------------------------------


def test_tokens_expire_and_are_listed_without_their_secret(service: Service) -> None:
    first = user(service, "carol")
    short = service.api(
        "POST", "/api/v1/admin/tokens",
        json={"username": "carol", "name": "short", "expires_in_days": 1.5 / 86400},
    )  # fmt: skip
    assert short.status_code == 201 and short.json()["expires_at"], short.text
    past = {"username": "carol", "expires_at": "2000-01-01T00:00:00Z"}
    assert service.api("POST", "/api/v1/admin/tokens", json=past).status_code == 422
    assert service.api("GET", "/api/v1/me", short.json()["token"]).status_code == 200
    assert service.api("GET", "/api/v1/me", first).status_code == 200
    time.sleep(2)
    expired = service.api("GET", "/api/v1/me", short.json()["token"])
    assert expired.status_code == 401 and "expired" in expired.json()["detail"]

    listed = service.api("GET", "/api/v1/admin/tokens", params={"username": "carol"})
    assert listed.status_code == 200
    rows = listed.json()
    assert {r["name"] for r in rows} == {"", "short"}
    assert all(set(r) == {"id", "username", "name", "created_at", "expires_at",
                          "last_used_at", "revoked", "expired"} for r in rows)  # fmt: skip
    text = listed.text + service.api("GET", "/api/v1/tokens", first).text
    assert first not in text and short.json()["token"] not in text
    assert next(r for r in rows if r["name"] == "short")["expired"] is True
    assert all(r["last_used_at"] for r in rows)  # both were used above
    own = service.api("GET", "/api/v1/tokens", first).json()
    assert {r["username"] for r in own} == {"carol"}


def test_tokens_and_sessions_are_revoked(service: Service) -> None:
    dave = user(service, "dave")
    other = user(service, "erin")
    spare = service.api("POST", "/api/v1/admin/tokens", json={"username": "dave"}).json()
    spare_id = max(r["id"] for r in service.api("GET", "/api/v1/tokens", dave).json())
    erin_id = service.api("GET", "/api/v1/tokens", other).json()[0]["id"]
    # A user revokes their own token, never another's.
    assert service.api("DELETE", f"/api/v1/tokens/{erin_id}", dave).status_code == 404
    assert service.api("DELETE", f"/api/v1/tokens/{spare_id}", dave).status_code == 200
    gone = service.api("GET", "/api/v1/me", spare["token"])
    assert gone.status_code == 401 and "revoked" in gone.json()["detail"]
    # The organizer revokes one token from the accounts page (a form with its CSRF token).
    with client(service, "127.0.0.8") as organizer:
        organizer.headers["Authorization"] = f"Bearer {service.admin_token}"
        page = organizer.get("/admin/accounts")
        assert page.status_code == 200 and "API tokens" in page.text
        assert other not in page.text
        token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
        assert token
        form = {"csrf_token": token.group(1)}
        assert organizer.post(f"/admin/tokens/{erin_id}/revoke", data=form).status_code == 303
    assert service.api("GET", "/api/v1/me", other).status_code == 401
    # ... and all of a user's access, web sessions included, through the API.
    with client(service, "127.0.0.9") as browser:
        assert login(browser, "dave", "dave-password").status_code == 303
        assert browser.get("/api/v1/me").status_code == 200
        reply = service.api("POST", "/api/v1/admin/users/dave/revoke")
        assert reply.status_code == 200 and reply.json()["sessions"] == 1, reply.text
        assert browser.get("/api/v1/me").status_code == 401
    assert service.api("GET", "/api/v1/me", dave).status_code == 401
    actions = {e["action"] for e in service.api("GET", "/api/v1/admin/audit").json()}
    assert {"revoke_token", "revoke_access"} <= actions


# --- metrics ------------------------------------------------------------------------------


def test_metrics_need_an_organizer(service: Service) -> None:
    contestant = user(service, "frank")
    anonymous = httpx.get(f"{service.url}/metrics", timeout=30)
    assert anonymous.status_code == 401 and "organizer" in anonymous.text
    assert service.api("GET", "/metrics", contestant).status_code == 403
    scraped = service.api("GET", "/metrics")
    assert scraped.status_code == 200 and "memorace_queue_depth" in scraped.text


# --- the login path in-process: the hash bound, and any name or password ------------------


@contextmanager
def _login_db(kind: str, tmp: Path, **limits: float) -> Iterator[Settings]:
    """A migrated database with one user (password 'right-password'), and settings whose
    throttle never locks (unless `limits` say otherwise)."""
    with backends(kind) as (db_url, _):
        settings = Settings(
            data_dir=tmp, database_url=db_url or f"sqlite:///{tmp}/db.sqlite",
            **{"login_free_failures": 10**9, "login_lock_after": 10**9,
               "login_addr_free_failures": 10**9, "login_addr_lock_after": 10**9, **limits},
        )  # fmt: skip
        migrate(settings.database_url)
        with session_scope(settings.database_url) as db:
            db.add(User(username="known", password_hash=hash_password("right-password")))
        yield settings


def test_logins_beyond_the_hash_slots_wait_then_get_busy(tmp_path: Path) -> None:
    with _login_db("embedded", tmp_path, login_hashes=1, login_hash_wait_s=0.05) as settings:
        app = FastAPI()

        async def flood() -> list[Result]:
            tries = [attempt(app, settings, "known", "wrong", f"10.0.0.{i}") for i in range(12)]
            return await asyncio.gather(*tries)

        results = asyncio.run(flood())
        busy = [r for r in results if r.busy]
        print(f"12 logins at once, 1 hash slot, 50 ms wait: {len(busy)} got 503")
        assert busy and len(busy) < 12 and all(r.retry_after >= 1 for r in busy)
        good = asyncio.run(attempt(app, settings, "known", "right-password", "10.0.1.1"))
        assert good.user_id is not None and good.session_id


@pytest.mark.parametrize("kind", ["postgres+redis", "embedded"])
def test_any_name_and_password_is_answered(kind: str, tmp_path: Path) -> None:
    """Form fields are outside input: any text (NUL, 10,000 characters, any script) is
    a failed login, never an error, on both databases."""
    with _login_db(kind, tmp_path) as settings:
        app, loop = FastAPI(), asyncio.new_event_loop()

        @hypothesis_settings(
            max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
        )
        @example("nul\x00name", "pw")
        @example("x" * 5000, "")
        @given(st.text(max_size=300) | st.just("known"), st.text(max_size=10_000))
        def check(username: str, password: str) -> None:
            result = loop.run_until_complete(attempt(app, settings, username, password, "10.0.2.1"))
            assert result.user_id is None and not result.busy

        try:
            check()
        finally:
            loop.close()
