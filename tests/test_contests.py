"""Several contests on one installation, through the HTTP API (in-process client, SQLite,
the embedded broker; nothing here waits for a judging): the organizer's contests API,
which contest a request means, registrations, the start gate, per-contest submissions,
settings, messages and audit, and fuzzed contest references. The service-level secrecy
across contests, on both backends, is tests/test_contest_secrecy.py."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import test_api
from tests.test_api import contestant, submit

ADMIN = "/api/v1/admin/contests"
client = test_api.client  # the fixture: an organizer's client on a fresh service


@contextmanager
def visitor(client: TestClient) -> Iterator[TestClient]:
    """The client without the organizer's token: nobody logged in."""
    token = client.headers.pop("Authorization")
    try:
        yield client
    finally:
        client.headers["Authorization"] = token


def spring(client: TestClient, problem: bool = True) -> dict:
    made = client.post(ADMIN, json={"slug": "spring", "title": "Spring round"})
    assert made.status_code == 201, made.text
    if problem:
        assert client.put(f"{ADMIN}/spring/problems/tiny", json={}).status_code == 200
    return made.json()


def move(client: TestClient, team: str, to: str, away: str = "main") -> None:
    """Registers `team` in `to` only."""
    assert client.put(f"{ADMIN}/{to}/teams/{team}", json={}).status_code == 200
    assert client.delete(f"{ADMIN}/{away}/teams/{team}").status_code == 204


def test_the_first_contest_is_main_and_current(client):
    listed = client.get(ADMIN).json()
    assert [(c["slug"], c["current"]) for c in listed] == [("main", True)]
    assert listed[0]["problems"] == [{"slug": "tiny", "version": 1}]
    assert client.get("/api/v1/admin/contest").json()["slug"] == "main"
    assert [c["slug"] for c in client.get("/api/v1/contests").json()] == ["main"]


def test_contests_are_made_with_their_own_problems_and_teams(client):
    made = spring(client, problem=False)
    assert made["slug"] == "spring" and not made["current"] and made["problems"] == []
    assert client.post(ADMIN, json={"slug": "spring"}).status_code == 409
    for bad in ("", "Spring", "a b", "123", "-x", "x" * 65, "../main"):
        assert client.post(ADMIN, json={"slug": bad}).status_code == 422, bad
    assert client.get("/api/v1/problems?contest=spring").json() == []
    assert client.put(f"{ADMIN}/spring/problems/tiny", json={"version": 9}).status_code == 404
    assert client.put(f"{ADMIN}/spring/problems/nosuch", json={}).status_code == 404
    pinned = client.put(f"{ADMIN}/spring/problems/tiny", json={"version": 1}).json()
    assert pinned["problems"] == [{"slug": "tiny", "version": 1}]
    assert [p["slug"] for p in client.get("/api/v1/problems?contest=spring").json()] == ["tiny"]
    assert client.delete(f"{ADMIN}/spring/problems/tiny").status_code == 204
    assert client.delete(f"{ADMIN}/spring/problems/tiny").status_code == 404
    actions = [e["action"] for e in client.get("/api/v1/admin/audit").json()]
    assert {"create_contest", "contest_problem", "contest_problem_removed"} <= set(actions)


def test_a_team_sees_only_its_contests_and_submits_there(client):
    spring(client)
    alice, bob = contestant(client), contestant(client, "blue", "bob")
    move(client, "blue", "spring")
    assert [c["slug"] for c in client.get("/api/v1/contests", headers=bob).json()] == ["spring"]
    assert [c["slug"] for c in client.get("/api/v1/contests", headers=alice).json()] == ["main"]
    # Another team's contest answers as one that does not exist.
    for ref in ("main", "1", "nosuch"):
        reply = client.get(f"/api/v1/leaderboard/tiny?contest={ref}", headers=bob)
        assert reply.status_code == 404 and reply.json()["detail"] == f"no contest '{ref}'"
    assert client.get("/api/v1/leaderboard/tiny", headers=bob).json()["contest"] == "spring"
    assert client.get("/api/v1/leaderboard/tiny", headers=alice).json()["contest"] == "main"
    sub = submit(client, bob).json()
    assert sub["contest"] == "spring"
    mine = client.get("/api/v1/submissions", headers=bob).json()
    assert [s["contest"] for s in mine] == ["spring"]
    refused = client.post(
        "/api/v1/submissions?contest=main", headers=bob,
        data={"problem": "tiny"}, files={"file": ("p.py", b"print(1)\n")},
    )  # fmt: skip
    assert refused.status_code == 404
    # The same bytes in another contest are a new submission, not a reuse.
    assert client.put(f"{ADMIN}/main/teams/blue", json={}).status_code == 200
    again = client.post(
        "/api/v1/submissions?contest=main", headers=bob,
        data={"problem": "tiny"}, files={"file": ("p.py", b"print('hello')\n")},
    )  # fmt: skip
    assert again.status_code == 201 and again.json()["contest"] == "main"


def test_a_pending_registration_sees_nothing_and_cannot_submit(client):
    spring(client)
    bob = contestant(client, "blue", "bob")
    assert client.put(f"{ADMIN}/spring/teams/blue", json={"status": "pending"}).status_code == 200
    assert client.get("/api/v1/problems?contest=spring", headers=bob).status_code == 404
    assert client.put(f"{ADMIN}/spring/teams/blue", json={"status": "bogus"}).status_code == 422


def test_before_its_start_a_contest_is_the_organizers_only(client):
    spring(client)
    bob = contestant(client, "blue", "bob")
    move(client, "blue", "spring")
    later = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    put = client.put("/api/v1/admin/contest?contest=spring", json={"start_at": later})
    assert put.status_code == 200 and put.json()["slug"] == "spring"
    gated = ("/api/v1/problems", "/api/v1/problems/tiny", "/api/v1/leaderboard/tiny",
             "/api/v1/problems/tiny/history.svg", "/api/v1/problems/tiny/statement")  # fmt: skip
    for path in gated:
        reply = client.get(path, headers=bob)
        assert reply.status_code == 404 and "starts at" in reply.json()["detail"], path
        assert client.get(path + "?contest=spring").status_code == 200, path  # organizers
    with visitor(client) as nobody:
        assert nobody.get("/api/v1/problems?contest=spring").status_code == 404
        assert nobody.get("/api/v1/problems").status_code == 200  # main: started
    # Main's settings are untouched.
    assert client.get("/api/v1/admin/contest").json()["start_at"] is None


def test_the_current_contest_is_what_a_plain_request_means(client):
    spring(client)
    assert client.post(f"{ADMIN}/spring/current").json()["current"]
    assert client.get("/api/v1/admin/contest").json()["slug"] == "spring"
    assert [c["current"] for c in client.get(ADMIN).json()] == [False, True]
    with visitor(client) as nobody:
        assert nobody.get("/api/v1/leaderboard/tiny").json()["contest"] == "spring"


def test_messages_belong_to_their_contest(client):
    spring(client)
    alice, bob = contestant(client), contestant(client, "blue", "bob")
    move(client, "blue", "spring")
    asked = client.post("/api/v1/clarifications", headers=bob, json={"question": "why?"})
    assert asked.status_code == 201 and asked.json()["contest_id"] == 2
    said = client.post("/api/v1/admin/announcements?contest=spring", json={"text": "hi spring"})
    assert said.status_code == 201
    assert client.post("/api/v1/admin/announcements", json={"text": "hi main"}).status_code == 201
    texts = [m["text"] for m in client.get("/api/v1/announcements", headers=bob).json()]
    assert texts == ["hi spring"]
    texts = [m["text"] for m in client.get("/api/v1/announcements", headers=alice).json()]
    assert texts == ["hi main"]
    assert client.get("/api/v1/clarifications", headers=alice).json() == []
    jury = client.get("/api/v1/admin/clarifications?contest=spring").json()
    assert [m["text"] for m in jury] == ["why?"]
    assert client.get("/api/v1/admin/clarifications").json() == []  # main's
    audit = client.get("/api/v1/admin/exports/audit?contest=spring&format=json").json()
    assert {"clarification_asked", "announcement"} <= {e["action"] for e in audit}
    assert "hi main" not in str(audit)


def test_sign_up_and_entry_per_contest(client):
    spring(client)
    assert client.put("/api/v1/admin/contest?contest=spring", json={"signup": "open"}).is_success
    body = {"username": "nell", "password": "password123", "team": "new", "contest": "spring"}
    closed = {**body, "username": "nell2", "team": "other", "contest": "main"}
    with visitor(client) as nobody:
        joinable = nobody.get("/api/v1/signup/contests").json()
        assert [c["slug"] for c in joinable] == ["spring"]
        assert nobody.post("/api/v1/signup", json=body).status_code == 201
        assert nobody.post("/api/v1/signup", json=closed).status_code == 403
    teams = {c["slug"]: c["teams"] for c in client.get(ADMIN).json()}
    assert {"team": "new", "status": "approved"} in teams["spring"]
    assert all(t["team"] != "new" for t in teams["main"])
    alice = contestant(client)
    assert client.put(
        "/api/v1/admin/contest?contest=spring", json={"signup": "approval"}
    ).is_success
    entered = client.post("/api/v1/contests/spring/entry", headers=alice)
    assert entered.status_code == 201 and entered.json()["status"] == "pending"
    assert client.post("/api/v1/contests/spring/entry", headers=alice).status_code == 409
    assert client.post("/api/v1/contests/main/entry", headers=alice).status_code == 403


REFS = st.one_of(
    st.text(max_size=80),
    st.sampled_from(["main", "1", "2", "0", "-1", "99999999999", "main\x00", " main ", "MAIN"]),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ref=REFS)
def test_fuzzed_contest_references_are_found_or_refused(client, ref):
    """Whatever `?contest=` holds: an answer for a contest there is, 404 or 422, never 500."""
    for path in ("/api/v1/problems", "/api/v1/leaderboard/tiny", "/api/v1/admin/contest"):
        reply = client.get(path, params={"contest": ref})
        assert reply.status_code in (200, 404, 422), (path, ref, reply.text)
        if reply.status_code == 200:
            assert ref.strip() in ("main", "1") or ref.strip() == "", ref
    if ref.strip() not in ("", ".", ".."):
        reply = client.post(f"{ADMIN}/{quote(ref, safe='')}/current")
        assert reply.status_code in (200, 404), (ref, reply.text)


def test_joining_by_code_meets_the_strictest_of_the_teams_contests(client):
    """A code made in a contest with approval cannot be used through an open one to
    skip the approval (or its team size)."""
    spring(client)
    assert client.post(ADMIN, json={"slug": "open"}).status_code == 201
    for slug, mode in (("spring", "approval"), ("open", "open")):
        body = {"signup": mode, "team_size": 2}
        assert client.put(f"/api/v1/admin/contest?contest={slug}", json=body).is_success
    founder = {"username": "fay", "password": "password123", "team": "fern", "contest": "spring"}
    with visitor(client) as nobody:
        made = nobody.post("/api/v1/signup", json=founder).json()
        assert made["pending"] and made["invite_code"]
        joiner = {"username": "joe", "password": "password123", "invite": made["invite_code"]}
        joined = nobody.post("/api/v1/signup", json={**joiner, "contest": "open"})
        assert joined.status_code == 201 and joined.json()["pending"], joined.text
        third = {**joiner, "username": "jim"}
        full = nobody.post("/api/v1/signup", json=third)
        assert full.status_code == 409 and "full: 2 members" in full.json()["detail"]


def test_a_blank_contest_names_none_and_problems_wait_for_the_start(client):
    spring(client)
    bob = contestant(client, "blue", "bob")
    move(client, "blue", "spring")
    assert client.get("/api/v1/problems?contest=", headers=bob).status_code == 404
    assert client.put("/api/v1/admin/contest?contest=", json={"title": "x"}).status_code == 404
    later = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    assert client.put("/api/v1/admin/contest?contest=spring", json={"start_at": later}).is_success
    asked = {"question": "how big?", "problem": "tiny"}
    reply = client.post("/api/v1/clarifications", headers=bob, json=asked)
    assert reply.status_code == 404 and "no problem 'tiny'" in reply.json()["detail"]
    general = client.post("/api/v1/clarifications", headers=bob, json={"question": "when?"})
    assert general.status_code == 201  # a general question may come before the start
    alice = contestant(client)
    assert client.delete(f"{ADMIN}/main/teams/red").status_code == 204
    refused = client.post("/api/v1/clarifications", headers=alice, json={"question": "hi"})
    assert refused.status_code == 403  # withdrawn: no questions in main any more


def test_a_contest_made_with_a_start_waits_and_a_shared_reveal_warns(client):
    later = (datetime.now(UTC) + timedelta(days=2)).isoformat()
    made = client.post(ADMIN, json={"slug": "later", "start_at": later}).json()
    assert made["start_at"] is not None
    assert client.put(f"{ADMIN}/later/problems/tiny", json={}).status_code == 200
    with visitor(client) as nobody:
        assert nobody.get("/api/v1/problems?contest=later").status_code == 404
    reveal = client.put("/api/v1/admin/contest", json={"hidden_revealed": True}).json()
    assert "later" in reveal["warning"]  # main's reveal shows the version later shares
    assert "warning" not in client.put("/api/v1/admin/contest", json={"title": "t"}).json()
