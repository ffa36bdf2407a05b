"""Sign-up (api.access.signup) over real HTTP on both backends: closed by default; open and
approval modes; teams by invitation code, at most the team size; organizers approve,
lock (tokens and sessions end) and reset passwords; sign-ups per address are capped;
any body gets an answer, never a 500."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api.access import signup
from api.errors import TooMany
from api.settings import Settings
from tests import test_pages
from tests.service import VENV_BIN, Service, start_service
from tests.test_package import make_package
from tests.test_pages import csrf_of, login, post
from tests.test_pages import service as pages_service  # noqa: F401  (the in-process app)
from tests.test_service_e2e import backends

PASSWORD = "a-long-password"


@pytest.fixture(scope="module", params=["embedded", "postgres+redis"])
def service(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("signup")
    with backends(request.param) as (db_url, broker_url):
        env = {"MEMORACE_SIGNUPS_PER_ADDRESS": "100000"}  # the cap has its own test
        svc = start_service(tmp, [make_package(tmp / "pkg")], db_url, broker_url, extra_env=env)
        try:
            yield svc
        finally:
            svc.stop()


def contest(service: Service, **changes) -> None:
    reply = service.api("PUT", "/api/v1/admin/contest", json=changes)
    assert reply.status_code == 200, reply.text


def sign_up(service: Service, **body) -> httpx.Response:
    return httpx.post(f"{service.url}/api/v1/signup", json=body, timeout=30)


def log_in(service: Service, username: str, password: str = PASSWORD) -> httpx.Client | None:
    """A browser logged in through the form, or None when the login is refused."""
    browser = httpx.Client(base_url=service.url, timeout=30)
    token = re.search(r'name="csrf_token" value="([^"]+)"', browser.get("/login").text).group(1)
    form = {"username": username, "password": password, "csrf_token": token}
    reply = browser.post("/login", data=form, follow_redirects=False)
    if reply.status_code == 303:
        return browser
    browser.close()
    return None


def name(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(3)}"


def test_closed_by_default_then_open_with_invitation_codes(service: Service) -> None:
    contest(service, signup="closed")
    refused = sign_up(service, username=name("x"), password=PASSWORD, team=name("t"))
    assert refused.status_code == 403 and "closed" in refused.text
    contest(service, signup="open", team_size=2)
    ada, team = name("ada"), name("Lovelace")
    made = sign_up(service, username=ada, password=PASSWORD, team=team)
    assert made.status_code == 201, made.text
    assert made.json()["pending"] is False and made.json()["team"] == team
    code = made.json()["invite_code"]
    assert code and code in made.json()["detail"]
    assert log_in(service, ada) is not None
    bob = name("bob")
    joined = sign_up(service, username=bob, password=PASSWORD, invite=code)
    assert joined.status_code == 201 and joined.json()["team"] == team
    assert joined.json()["invite_code"] is None  # only the team's maker is shown one
    full = sign_up(service, username=name("cy"), password=PASSWORD, invite=code)
    assert full.status_code == 409 and "full" in full.text
    wrong = sign_up(service, username=name("cy"), password=PASSWORD, invite="no-such-code")
    assert wrong.status_code == 404
    taken = sign_up(service, username=ada, password=PASSWORD, team=name("t"))
    assert taken.status_code == 409 and "exists" in taken.text
    for body in ({"username": name("d"), "password": PASSWORD},  # neither team nor code
                 {"username": name("d"), "password": PASSWORD, "team": "a", "invite": code},
                 {"username": name("d"), "password": "short", "team": name("t")}):  # fmt: skip
        reply = sign_up(service, **body)
        assert reply.status_code == 400, (body, reply.text)
    # A member makes a new code; the old one stops working.
    browser = log_in(service, bob)
    assert browser is not None
    token = service.api("POST", "/api/v1/admin/tokens", json={"username": bob}).json()["token"]
    fresh = service.api("POST", "/api/v1/team/invite", token)
    assert fresh.status_code == 201 and fresh.json()["invite_code"] != code
    contest(service, team_size=3)
    stale = sign_up(service, username=name("cy"), password=PASSWORD, invite=code)
    assert stale.status_code == 404
    again = sign_up(
        service, username=name("cy"), password=PASSWORD, invite=fresh.json()["invite_code"]
    )
    assert again.status_code == 201


def test_approval_lock_and_password_reset(service: Service) -> None:
    contest(service, signup="approval", team_size=4)
    dee = name("dee")
    made = sign_up(service, username=dee, password=PASSWORD, team=name("Hopper"))
    assert made.status_code == 201 and made.json()["pending"] is True
    assert "approval" in made.json()["detail"]
    assert log_in(service, dee) is None  # not before the approval
    waiting = service.api("GET", "/api/v1/admin/users/pending").json()
    assert dee in [u["username"] for u in waiting]
    assert service.api("POST", f"/api/v1/admin/users/{dee}/approve").status_code == 200
    browser = log_in(service, dee)
    assert browser is not None
    assert browser.get("/submissions", follow_redirects=False).status_code == 200
    token = service.api("POST", "/api/v1/admin/tokens", json={"username": dee}).json()["token"]
    assert service.api("GET", "/api/v1/submissions", token).status_code == 200
    # Locked: the session ends, the token is refused, the login too.
    locked = service.api("POST", f"/api/v1/admin/users/{dee}/lock", json={"locked": True})
    assert locked.status_code == 200 and locked.json()["locked"] is True
    assert browser.get("/submissions", follow_redirects=False).status_code == 303
    assert service.api("GET", "/api/v1/submissions", token).status_code == 401
    assert log_in(service, dee) is None
    service.api("POST", f"/api/v1/admin/users/{dee}/lock", json={"locked": False})
    assert log_in(service, dee) is not None
    # A new password: the old one no longer logs in.
    reset = service.api("POST", f"/api/v1/admin/users/{dee}/password",
                        json={"password": "another-long-one"})  # fmt: skip
    assert reset.status_code == 200, reset.text
    assert log_in(service, dee) is None and log_in(service, dee, "another-long-one") is not None
    for path, body in ((f"/api/v1/admin/users/{dee}/password", {"password": "short"}),
                       ("/api/v1/admin/users/nobody-here/approve", None),
                       ("/api/v1/admin/users/admin/lock", {"locked": True})):  # fmt: skip
        reply = service.api("POST", path, json=body)
        assert reply.status_code in (400, 404, 409, 422), (path, reply.text)
    assert service.api("POST", "/api/v1/admin/users/x/approve", token).status_code in (401, 403)
    assert "sign_up" in service.api("GET", "/api/v1/admin/audit").text


def test_signups_per_address_are_capped(service: Service) -> None:
    """api.access.signup.admit on the service's own database: the third from one address in
    the window is refused; another address is not."""
    url = service.env.get("MEMORACE_DATABASE_URL") or f"sqlite:///{service.data_dir}/db.sqlite"
    config = Settings(database_url=url, signups_per_address=2)
    address = name("203.0.113")
    for _ in range(2):
        signup.admit(config, address)
    with pytest.raises(TooMany, match="this address"):
        signup.admit(config, address)
    signup.admit(config, name("198.51.100"))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(st.dictionaries(st.sampled_from(["username", "password", "team", "invite", "x"]),
                       st.one_of(st.text(max_size=120), st.integers(), st.none()),
                       max_size=5))  # fmt: skip
def test_any_signup_body_gets_an_answer_not_a_crash(service: Service, body: dict) -> None:
    contest(service, signup="open")
    reply = sign_up(service, **body)
    assert reply.status_code in (201, 400, 404, 409, 422), reply.text


def memorace(service: Service, token: str, *args: str, password: str = "") -> str:
    env = {**os.environ, "MEMORACE_URL": service.url, "MEMORACE_TOKEN": token, "COLUMNS": "200",
           "MEMORACE_PASSWORD": password}  # fmt: skip
    done = subprocess.run([str(VENV_BIN / "memorace"), *args], env=env, capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_cli_signs_up_and_organizers_keep_accounts(service: Service) -> None:
    contest(service, signup="approval", team_size=4)
    eve, team = name("eve"), name("Noether")
    said = memorace(service, "", "signup", eve, "--team", team, "--json", password=PASSWORD)
    made = json.loads(said)
    assert made["pending"] is True and made["invite_code"]
    admin = service.admin_token
    assert eve in [u["username"] for u in json.loads(memorace(service, admin, "pending", "--json"))]
    assert "active" in memorace(service, admin, "approve", eve)
    assert log_in(service, eve) is not None
    assert "locked" in memorace(service, admin, "lock", eve)
    assert log_in(service, eve) is None
    assert "active" in memorace(service, admin, "lock", eve, "--unlock")
    memorace(service, admin, "reset-password", eve, password="yet-another-password")
    assert log_in(service, eve, "yet-another-password") is not None
    token = service.api("POST", "/api/v1/admin/tokens", json={"username": eve}).json()["token"]
    fresh = json.loads(memorace(service, token, "invite", "--json"))
    assert fresh["team"] == team and fresh["invite_code"] != made["invite_code"]


# --- the sign-up page, in-process (tests.test_pages' app) --------------------------------


def test_sign_up_with_approval_and_the_organizers_buttons(
    pages_service: test_pages.Service,  # noqa: F811
) -> None:
    """The sign-up page (closed, then with approval); the invitation code shows once; the
    organizer approves, locks, unlocks and resets the password on the accounts page."""
    anonymous = pages_service.client_for(None)
    assert "Sign-up is closed" in anonymous.get("/signup").text
    boss = pages_service.client_for("boss")
    assert 'name="signup"' in boss.get("/admin").text
    page = boss.get("/admin").text
    token = csrf_of(page)
    saved = boss.post("/admin/contest", data={"csrf_token": token, "signup": "approval",
                      "team_size": "3"}, follow_redirects=False)  # fmt: skip
    assert saved.status_code == 303, saved.text
    form = {"username": "newbie", "password": test_pages.PASSWORD, "team": "green"}
    made = post(anonymous, "/signup", "/signup", form)
    assert made.status_code == 201 and "waits for an organizer" in made.text
    assert re.search(r'id="invite-code">[\w-]{16}<', made.text)
    again = post(anonymous, "/signup", "/signup", {**form, "team": "green2"})
    assert again.status_code == 409 and "exists already" in again.text
    pending = login(pages_service.client_for(None), "newbie")  # the right password, not approved
    assert pending.status_code == 403 and "approval" in pending.text
    assert login(pages_service.client_for(None), "newbie", "not-the-password").status_code == 401
    accounts = boss.get("/admin/accounts").text
    assert "/admin/users/newbie/approve" in accounts
    assert post(boss, "/admin/accounts", "/admin/users/newbie/approve", {}).status_code == 303
    newbie = pages_service.client_for("newbie")  # logs in now
    assert (
        post(boss, "/admin/accounts", "/admin/users/newbie/lock", {"locked": "1"}).status_code
        == 303
    )
    assert newbie.get("/submissions", follow_redirects=False).status_code == 303  # session ended
    assert "/admin/users/newbie/lock" in boss.get("/admin/accounts").text  # the Unlock button
    post(boss, "/admin/accounts", "/admin/users/newbie/lock", {"locked": "0"})
    reset = post(boss, "/admin/accounts", "/admin/users/newbie/password", {"password": "short"})
    assert reset.status_code == 400 and "at least 8" in reset.text
    post(boss, "/admin/accounts", "/admin/users/newbie/password", {"password": "brand-new-pass"})
    assert login(pages_service.client_for(None), "newbie").status_code == 401
    assert login(pages_service.client_for(None), "newbie", "brand-new-pass").status_code == 303


def test_an_ipv6_address_counts_as_its_64() -> None:
    """A host picks any address of its /64: the per-address cap counts the /64."""
    assert signup.counted_as("2001:db8::1") == signup.counted_as("2001:db8::ffff:9")
    assert signup.counted_as("2001:db8::1") != signup.counted_as("2001:db8:0:1::1")
    assert signup.counted_as("::ffff:10.0.0.1") == "10.0.0.1"
    assert signup.counted_as("10.0.0.1") == "10.0.0.1"
    assert signup.counted_as("testclient") == "testclient"


@given(st.text(max_size=60))
def test_fuzzed_addresses_count_as_some_text(address: str) -> None:
    assert isinstance(signup.counted_as(address), str)
