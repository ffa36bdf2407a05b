"""The API processes' read caches stay correct (both backends, in-process ASGI client):
the problem page follows a weight's change and the reveal at once and keeps hidden
figures from contestants before it; the token cache never mixes users up, a revocation
in this process counts at once, one elsewhere within tokencache.TTL_S, and a write
always checks the database."""

from __future__ import annotations

import re

from sqlalchemy import select, update

from api.access import tokencache
from api.db.models import ApiToken
from api.db.session import get_engine, session_scope
from api.settings import get_settings
from tests.test_read_scaling import client, contestant, judge, submit  # noqa: F401


def _case_row(html: str, case: str) -> str:
    row = re.search(rf"<tr>\s*<td>{case}</td>.*?</tr>", html, re.S)
    assert row is not None, html
    return row.group(0)


def _weight(html: str, case: str) -> str:
    return re.findall(r'<td class="num">([^<]*)</td>', _case_row(html, case))[0]


def test_problem_page_follows_weights_and_the_reveal(client):  # noqa: F811
    red = contestant(client, "red", "alice")
    page = client.get("/problems/tiny", headers=red).text
    assert _weight(page, "three") == "1"
    assert "bytes" not in _case_row(page, "two")  # a hidden case's figures stay hidden
    assert "bytes" in _case_row(client.get("/problems/tiny").text, "two")  # organizers

    # A weight moves no board (no rescore yet), but the page shows it at once.
    reply = client.patch("/api/v1/admin/problems/tiny/cases/three", json={"weight": 3})
    assert reply.status_code == 200, reply.text
    page = client.get("/problems/tiny", headers=red).text
    assert _weight(page, "three") == "3" and "bytes" not in _case_row(page, "two")

    reply = client.put("/api/v1/admin/contest", json={"hidden_revealed": True})
    assert reply.status_code == 200, reply.text
    assert "bytes" in _case_row(client.get("/problems/tiny", headers=red).text, "two")
    assert client.get("/problems/nope", headers=red).status_code == 404


def test_token_cache_keeps_users_apart_and_revocations_bounded(client, monkeypatch):  # noqa: F811
    red, blue = contestant(client, "red", "alice"), contestant(client, "blue", "bob")
    for _ in range(3):  # cached after the first read: still each token's own user
        assert client.get("/api/v1/me", headers=red).json()["team"] == "red"
        assert client.get("/api/v1/me", headers=blue).json()["team"] == "blue"
    assert client.get("/api/v1/leaderboard/tiny", headers=red).status_code == 200

    # Revoked behind this process's back (another API process, or by hand): reads may
    # still pass until the cached check is TTL_S old; a write is refused at once.
    # (A Core connection: an ORM session's commit here would clear the cache at once.)
    with get_engine(get_settings().database_url).begin() as conn:
        conn.execute(update(ApiToken).where(ApiToken.user_id != 1).values(revoked=True))
    assert client.get("/api/v1/me", headers=red).status_code == 200
    files = {"file": ("p.py", b"print(1)\n")}
    refused = client.post("/api/v1/submissions", headers=red, data={"problem": "tiny"}, files=files)
    assert refused.status_code == 401 and "revoked" in refused.json()["detail"]
    monkeypatch.setattr(tokencache, "TTL_S", 0.0)  # as if TTL_S had passed (LIVE_TTL_S
    monkeypatch.setattr(tokencache, "LIVE_TTL_S", 0.0)  # while news is heard: SQLite)
    assert client.get("/api/v1/me", headers=blue).status_code == 401


def test_revocation_in_this_process_counts_at_once(client):  # noqa: F811
    red = contestant(client, "red", "alice")
    assert client.get("/api/v1/me", headers=red).status_code == 200  # now cached
    submit(client, red, 1)
    tokens = client.get("/api/v1/admin/tokens").json()
    mine = next(t["id"] for t in tokens if t["username"] == "alice")
    assert client.delete(f"/api/v1/admin/tokens/{mine}").status_code == 200
    gone = client.get("/api/v1/me", headers=red)
    assert gone.status_code == 401 and "revoked" in gone.json()["detail"]


def test_a_revocation_during_a_token_check_is_not_outlived(client, monkeypatch):  # noqa: F811
    """A token checked in the database just before its revocation committed (another
    request of this process, or another process whose news came meanwhile) was kept
    after the revocation's clear: then read on for the cache's whole TTL (a minute while
    the Redis news is heard)."""
    from api.access import deps

    red = contestant(client, "red", "alice")
    real = deps.check_token

    def revoked_meanwhile(db, token):
        found = real(db, token)  # read before the revocation commits
        with session_scope(get_settings().database_url) as other:  # clears at its commit
            other.execute(update(ApiToken).where(ApiToken.user_id != 1).values(revoked=True))
        return found

    monkeypatch.setattr(deps, "check_token", revoked_meanwhile)
    client.cookies.clear()
    assert client.get("/api/v1/me", headers=red).status_code == 200  # read before: allowed
    monkeypatch.setattr(deps, "check_token", real)
    for path in ("/api/v1/me", "/api/v1/submissions", "/api/v1/leaderboard/tiny"):
        gone = client.get(path, headers=red)
        assert gone.status_code == 401 and "revoked" in gone.json()["detail"], path


def test_a_frozen_board_s_etag_says_nothing_its_body_does_not(client):  # noqa: F811
    """The ETag was the global board counter: during a freeze a team saw it move with
    every other team's judging (and a hidden-only rescore), which the board hides."""
    red, blue = contestant(client, "red", "alice"), contestant(client, "blue", "bob")
    reply = client.put("/api/v1/admin/contest", json={"freeze_at": "2000-01-01T00:00:00Z"})
    assert reply.status_code == 200, reply.text
    client.cookies.clear()
    before = client.get("/api/v1/leaderboard/tiny", headers=red)
    for n in range(2):
        judge(submit(client, blue, n), {"one": 1.0, "three": 1.0, "two": 1.0})
    client.cookies.clear()
    after = client.get("/api/v1/leaderboard/tiny", headers=red)
    assert after.content == before.content  # blue's newer submissions stay off red's board
    assert after.headers["ETag"] == before.headers["ETag"]
    again = {**red, "If-None-Match": before.headers["ETag"]}
    assert client.get("/api/v1/leaderboard/tiny", headers=again).status_code == 304
    blue_board = client.get("/api/v1/leaderboard/tiny", headers=blue)
    assert [r["team"] for r in blue_board.json()["rows"]] == ["blue"]


def _follow(app_client, sub_id: int, headers: dict[str, str]) -> list[str]:
    """The event names of a whole stream (a judged submission's ends at once)."""
    url = f"/api/v1/submissions/{sub_id}/events"
    with app_client.stream("GET", url, headers=headers) as reply:
        assert reply.status_code == 200
        return [line[7:] for line in reply.iter_lines() if line.startswith("event: ")]


def test_a_judged_submission_s_view_is_kept_for_later_streams(client, monkeypatch):  # noqa: F811
    """Each stream opened on a judged submission read it again (its channel closes with
    its last stream): 15 % of the API's CPU under the contest profile. The view is now
    kept as the team's lists are, and goes with the same news."""
    from api import news
    from api.reads import readcache

    monkeypatch.setattr(readcache, "STALENESS_S", 30.0)  # no expiry within the test
    red = contestant(client, "red", "alice")
    contestant(client, "blue", "bob")
    sub = submit(client, red, 1)
    judge(sub, {"one": 1.0, "three": 0.5, "two": 0.25})
    hub = client.app.state.broadcaster
    reads = hub.reads
    whole = ["status", "case", "case", "case", "end"]  # the hidden case at the end
    for _ in range(5):
        assert _follow(client, sub, red) == whole
    # One read; at most one more if the broadcaster's safety poll saw the channel open.
    assert hub.reads - reads <= 2
    reads = hub.reads
    assert _follow(client, sub, {}) == whole  # an organizer's: read once for its class
    assert 1 <= hub.reads - reads <= 2

    reads = hub.reads
    readcache.hear(news.News(999, team=_team_id("blue")))  # another team's news: kept
    for _ in range(5):
        _follow(client, sub, red)
    assert hub.reads - reads <= 1
    reads = hub.reads
    readcache.hear(news.News(sub, team=_team_id("red")))  # its team's (a rejudge): read again
    _follow(client, sub, red)
    assert hub.reads - reads >= 1


def _team_id(name: str) -> int:
    from api.db.models import Team

    with session_scope(get_settings().database_url) as db:
        return db.scalars(select(Team.id).where(Team.name == name)).one()
