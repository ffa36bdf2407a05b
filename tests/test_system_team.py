"""The baselines' system team (api.actions.baselines) takes no users and no tokens: an organizer
cannot put a contestant in it or give one of its users a token, through the API or the
pages, nor take its reserved names; and a user put in it by hand (in the database)
cannot submit. Real HTTP against the real service, both backends."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from api.access.auth import hash_password, new_token
from api.actions import baselines
from api.db.models import Submission, Team, User
from api.db.session import session_scope
from tests.service import Service, small_package, start_service
from tests.test_service_e2e import backends

PROBLEM = "mini-gpt2"
PLANNER = b"print('not run')\n"


@pytest.fixture(scope="module", params=["postgres+redis", "embedded"])
def stack(request, tmp_path_factory) -> Iterator[tuple[Service, str, str]]:
    """(the service, its database URL, the token of a hand-made user of the system team)."""
    tmp = tmp_path_factory.mktemp("system-team")
    with backends(request.param) as (db_url, broker_url):
        service = start_service(
            tmp, [small_package(tmp)], database_url=db_url, broker_url=broker_url
        )
        url = db_url or f"sqlite:///{service.data_dir}/db.sqlite"
        try:
            with session_scope(url) as db:  # what a hand edit of the database would make
                team_id = baselines.owner(db).team_id
                intruder = User(
                    username="intruder", password_hash=hash_password("intruder-password"),
                    team_id=team_id,
                )  # fmt: skip
                db.add(intruder)
                db.flush()
                token = new_token(db, intruder, "by hand")
            yield service, url, token
        finally:
            service.stop()


def refused(reply: httpx.Response, status: int, *words: str) -> None:
    assert reply.status_code == status, (reply.status_code, reply.text[:300])
    detail = reply.json()["detail"]
    assert all(w in detail for w in words), detail


def test_the_api_puts_no_user_and_no_token_in_the_system_team(stack) -> None:
    service, _, _ = stack
    body = {"username": "mole", "password": "mole-password", "team": baselines.TEAM}
    refused(service.api("POST", "/api/v1/admin/users", json=body), 409, "takes no users")
    for username in ("intruder", baselines.USER):
        reply = service.api("POST", "/api/v1/admin/tokens", json={"username": username})
        refused(reply, 409, "reference planners", "no tokens")
    reply = service.api("POST", "/api/v1/admin/teams", json={"name": f" {baselines.TEAM} "})
    refused(reply, 409, "reserved")
    reply = service.api("POST", "/api/v1/admin/users", json={"username": baselines.USER})
    refused(reply, 409, "reserved")
    users = {e["target"] for e in service.api("GET", "/api/v1/admin/audit").json()}
    assert "mole" not in users and baselines.USER not in users  # nothing happened
    # Everyone else is served as before.
    assert service.add_team("ordinary", "ordinary-user").startswith("mr_")


def test_a_user_of_the_system_team_cannot_submit(stack) -> None:
    service, url, token = stack
    with httpx.Client(base_url=service.url, timeout=60) as c:
        reply = c.post(
            "/api/v1/submissions", headers={"Authorization": f"Bearer {token}"},
            data={"problem": PROBLEM}, files={"file": ("p.py", PLANNER)},
        )  # fmt: skip
    refused(reply, 403, "reference planners", "cannot submit")
    # Nor through the page, logged in with a password.
    with httpx.Client(base_url=service.url, timeout=60) as web:
        assert login(web, "intruder", "intruder-password").status_code == 303
        page = web.post(
            "/submit", data={"problem": PROBLEM, "csrf_token": csrf(web.get("/submit").text)},
            files={"file": ("p.py", PLANNER, "text/x-python")}, follow_redirects=False,
        )  # fmt: skip
    assert page.status_code == 403, (page.status_code, page.text[:300])
    assert "cannot submit" in page.text
    with session_scope(url) as db:
        intruder = db.query(User).filter(User.username == "intruder").one()
        assert db.query(Submission).filter(Submission.user_id == intruder.id).count() == 0


def test_the_pages_put_no_user_and_no_token_in_the_system_team(stack) -> None:
    service, url, _ = stack
    body = {"username": "organizer-2", "password": "organizer-password", "admin": True}
    assert service.api("POST", "/api/v1/admin/users", json=body).status_code == 201
    with httpx.Client(base_url=service.url, timeout=60) as web:
        assert login(web, "organizer-2", "organizer-password").status_code == 303
        page = web.get("/admin/accounts")
        assert page.status_code == 200
        # Neither form offers it; the teams table says what it is.
        assert f'<option value="{baselines.TEAM}">' not in page.text
        assert '<option value="intruder">' not in page.text
        assert "the reference planners (no users, no tokens)" in page.text
        form = {"username": "mole", "password": "mole-password", "team": baselines.TEAM}
        made = web.post("/admin/users", data={**form, "csrf_token": csrf(page.text)})
        assert made.status_code == 409 and "takes no users" in made.text, made.text[:300]
        form = {"username": "intruder", "name": "x", "expires_in_days": ""}
        issued = web.post("/admin/tokens", data={**form, "csrf_token": csrf(page.text)})
        assert issued.status_code == 409 and "no tokens" in issued.text, issued.text[:300]
        named = web.post(
            "/admin/teams", data={"name": baselines.TEAM, "csrf_token": csrf(page.text)}
        )
        assert named.status_code == 409 and "reserved" in named.text, named.text[:300]
    with session_scope(url) as db:
        system = db.query(Team).filter(Team.system.is_(True)).one()
        members = {u.username for u in db.query(User).filter(User.team_id == system.id)}
        assert members == {baselines.USER, "intruder"}  # only the two made above
        assert db.query(Team).filter(Team.name == baselines.TEAM).count() == 1


def csrf(html: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert found, html[:300]
    return found.group(1)


def login(web: httpx.Client, username: str, password: str) -> httpx.Response:
    form = {"csrf_token": csrf(web.get("/login").text), "username": username, "password": password}
    return web.post("/login", data=form, follow_redirects=False)
