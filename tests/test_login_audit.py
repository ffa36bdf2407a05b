"""Failed logins in the audit log (api.access.login, api.actions.audit.tally): a flood
of invented user names is one `login_failed` entry per client address, with its counts,
never an entry per name; a name that has no account is never written as a target; and
the caller gets the same answer for a name that does not exist as for a wrong password.
Real HTTP against the real service on both backends, logins from several threads at
once."""

from __future__ import annotations

import re
import secrets
import statistics
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.service import Service, small_package, start_service
from tests.test_auth_attacks import client
from tests.test_service_e2e import backends

INVENTED = 200
ROUNDS = 60
LOCK_AFTER = 5  # per account name
THROTTLE = {  # the address never backs off here: every guess is hashed and counted
    "MEMORACE_LOGIN_FREE_FAILURES": "2",
    "MEMORACE_LOGIN_LOCK_AFTER": str(LOCK_AFTER),
    "MEMORACE_LOGIN_ADDR_FREE_FAILURES": "100000",
    "MEMORACE_LOGIN_ADDR_LOCK_AFTER": "100000",
    "MEMORACE_LOGIN_BACKOFF_S": "0.01",
    "MEMORACE_LOGIN_HASH_WAIT_S": "60",
}


@pytest.fixture(scope="module", params=["postgres+redis", "embedded"])
def service(request, tmp_path_factory) -> Iterator[Service]:
    tmp = tmp_path_factory.mktemp("login-audit")
    with backends(request.param) as (db_url, broker_url):
        service = start_service(
            tmp, [small_package(tmp)], database_url=db_url, broker_url=broker_url,
            extra_env=THROTTLE,
        )  # fmt: skip
        try:
            yield service
        finally:
            service.stop()


def csrf(web: httpx.Client) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', web.get("/login").text)
    assert found
    return found.group(1)


def login(web: httpx.Client, token: str, username: str, password: str) -> httpx.Response:
    form = {"csrf_token": token, "username": username, "password": password}
    return web.post("/login", data=form, follow_redirects=False)


def audit(service: Service) -> list[dict]:
    reply = service.api("GET", "/api/v1/admin/audit", params={"limit": 1000})
    assert reply.status_code == 200
    return reply.json()


def test_a_flood_of_invented_names_is_one_entry_with_its_count(service: Service) -> None:
    service.add_team("team-known", "known")
    names = [f"nobody-{secrets.token_hex(6)}" for _ in range(INVENTED)]
    before = len(audit(service))

    def guesses(part: list[str]) -> list[int]:
        with client(service, "127.0.1.2") as web:
            token = csrf(web)
            return [login(web, token, name, "guess-password").status_code for name in part]

    with ThreadPoolExecutor(4) as pool:  # parallel failures: each one counted once
        statuses = [s for part in pool.map(guesses, [names[i::4] for i in range(4)]) for s in part]
    with client(service, "127.0.1.2") as web:
        token = csrf(web)
        statuses += [login(web, token, "known", "wrong-password").status_code for _ in range(2)]
    assert statuses == [401] * (INVENTED + 2), sorted(set(statuses))
    entries = audit(service)
    new = entries[: len(entries) - before]
    print(f"{INVENTED} invented names and 2 wrong passwords: {len(new)} audit entries")
    assert len(new) <= 2, new
    assert not [e for e in entries if e["target"].startswith("nobody-")], "a name was written"
    (tally,) = [e for e in new if e["action"] == "login_failed"]
    assert tally["target"] == "address 127.0.1.2" and tally["actor"] == "system"
    assert tally["detail"]["count"] == INVENTED + 2, tally
    assert tally["detail"]["unknown_names"] == INVENTED, tally
    # Organizers read it on the audit page (and in the audit export) as well.
    organizer = {"Authorization": f"Bearer {service.admin_token}", "Accept": "text/html"}
    page = httpx.get(f"{service.url}/admin/audit", headers=organizer, timeout=60)
    assert page.status_code == 200 and f"unknown_names={INVENTED}" in page.text


def test_an_invented_name_locked_out_is_never_written(service: Service) -> None:
    service.add_team("team-victim", "victim")
    with client(service, "127.0.1.3") as web:
        token = csrf(web)
        for name in ("ghost-name", "victim"):  # locked alike: the answers do not tell
            statuses: list[int] = []
            while statuses.count(401) < LOCK_AFTER and len(statuses) < 100:
                statuses.append(login(web, token, name, "guess-password").status_code)
                time.sleep(0.05)  # past the short backoff (0.01 s, doubling)
            locked = login(web, token, name, "guess-password")
            assert set(statuses) <= {401, 429} and statuses.count(401) == LOCK_AFTER, statuses
            assert locked.status_code == 429 and int(locked.headers["retry-after"]) > 60
    entries = audit(service)
    locks = {e["target"] for e in entries if e["action"] == "login_locked"}
    assert "victim" in locks and "ghost-name" not in locks, locks
    assert not [e for e in entries if "ghost-name" in e["target"]]
    (tally,) = [e for e in entries if e["target"] == "address 127.0.1.3"]
    assert tally["detail"]["count"] == 2 * LOCK_AFTER
    assert tally["detail"]["unknown_names"] == LOCK_AFTER


def test_an_unknown_name_is_answered_as_a_wrong_password(service: Service) -> None:
    """Same status, same page; and the same work (one hash, the same statements): the
    times are printed, not asserted (a loaded machine's jitter is larger)."""
    assert (
        service.api("POST", "/api/v1/admin/teams", json={"name": "team-timed"}).status_code == 201
    )
    for i in range(ROUNDS // 2):  # two failures each: below any backoff
        body = {"username": f"timed-{i}", "password": "timed-password", "team": "team-timed"}
        assert service.api("POST", "/api/v1/admin/users", json=body).status_code == 201
    times: dict[str, list[float]] = {"known": [], "unknown": []}
    pages: dict[str, set[str]] = {"known": set(), "unknown": set()}
    with client(service, "127.0.1.4") as web:
        token = csrf(web)
        for i in range(ROUNDS):  # interleaved: drift in the machine's load hits both alike
            for kind in ("known", "unknown"):
                name = f"timed-{i // 2}" if kind == "known" else f"nobody-{i}"
                start = time.perf_counter()
                reply = login(web, token, name, "wrong-password")
                times[kind].append(time.perf_counter() - start)
                assert reply.status_code == 401
                pages[kind].add(
                    re.sub(r'(nonce|value)="[^"]*"', "", reply.text).replace(name, "NAME")
                )
    assert pages["known"] == pages["unknown"] and len(pages["known"]) == 1
    known, unknown = (statistics.median(times[k]) * 1000 for k in ("known", "unknown"))
    print(f"failed login, median of {ROUNDS}: known {known:.1f} ms, unknown {unknown:.1f} ms")
