"""api.reads.readcache, the per-process micro-cache of the hot reads (both backends): a change
made behind the process's back shows once STALENESS_S has passed, a commit of this
process shows at once, a cached answer never crosses a team or a visibility scope, the
token is checked on every request, and bookkeeping writes (token use) keep the cache.
Across two API processes (real HTTP, PostgreSQL + Redis): another process's write and
a worker's judging show at once through the Redis news, however long STALENESS_S is.

STALENESS_S is set long (60 s) where a test shows that something else refreshes the
cache, and to 0 for "once STALENESS_S has passed": no timing is asserted.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import text

from api import news
from api.access import tokencache
from api.access.auth import touch_token
from api.db.session import get_engine, session_scope
from api.reads import readcache
from api.settings import get_settings
from tests.test_read_scaling import client, contestant, judge, submit  # noqa: F401

LONG = 60.0


def _behind_our_back(sql: str) -> None:
    """A write this process's sessions never see: as another process (or a person) would
    make it, with no news."""
    with get_engine(get_settings().database_url).begin() as conn:
        conn.execute(text(sql))


def _list(client, headers):  # noqa: F811
    reply = client.get("/api/v1/submissions", headers=headers)
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_a_change_behind_our_back_shows_within_the_staleness_bound(client, monkeypatch):  # noqa: F811
    red = contestant(client, "red", "alice")
    sub = submit(client, red, 1)
    monkeypatch.setattr(readcache, "STALENESS_S", LONG)
    assert _list(client, red)[0]["status_detail"] == "waiting for a worker"
    board = client.get("/api/v1/leaderboard/tiny", headers=red).headers["ETag"]
    _behind_our_back(f"UPDATE submissions SET status_detail = 'moved' WHERE id = {sub}")
    _behind_our_back("UPDATE contest SET hidden_revealed = TRUE WHERE id = 1")  # shown
    _behind_our_back("UPDATE board_state SET version = version + 1")
    # Still the kept answers: no commit here, no news (the embedded broker has none).
    assert _list(client, red)[0]["status_detail"] == "waiting for a worker"
    assert client.get("/api/v1/leaderboard/tiny", headers=red).headers["ETag"] == board
    monkeypatch.setattr(readcache, "STALENESS_S", 0.0)  # as if STALENESS_S had passed
    assert _list(client, red)[0]["status_detail"] == "moved"
    assert client.get("/api/v1/leaderboard/tiny", headers=red).headers["ETag"] != board


def test_this_process_s_commits_show_at_once(client, monkeypatch):  # noqa: F811
    monkeypatch.setattr(readcache, "STALENESS_S", LONG)
    red, blue = contestant(client, "red", "alice"), contestant(client, "blue", "bob")
    assert _list(client, red) == [] and _list(client, blue) == []
    first = submit(client, red, 1)  # the team's own submission: listed at once
    assert [s["id"] for s in _list(client, red)] == [first]
    assert _list(client, blue) == []  # never another team's page
    assert client.get("/api/v1/leaderboard/tiny", headers=blue).json()["rows"] == []
    judge(first, {"one": 1.0, "three": 0.5, "two": 0.25})  # the worker's commit, here
    done = _list(client, red)[0]
    assert done["status"] == "done" and done["public_score"] is not None
    rows = client.get("/api/v1/leaderboard/tiny", headers=blue).json()["rows"]
    assert [r["team"] for r in rows] == ["red"]
    # Bookkeeping keeps the cache: a token's last-use stamp is no news.
    before = readcache.generation()
    with session_scope(get_settings().database_url) as db:
        touch_token(db, 1)
    assert readcache.generation() == before


def test_an_upload_clears_only_what_it_changed(client, monkeypatch):  # noqa: F811
    """A contestant's upload writes one submission and its judging: it clears that
    team's list (listed at once) and the lists that show queue positions, not the
    boards nor another team's list (api.reads.invalidation); an organizer's other write clears
    everything."""
    monkeypatch.setattr(readcache, "STALENESS_S", LONG)
    red, blue = contestant(client, "red", "alice"), contestant(client, "blue", "bob")
    judge(submit(client, blue, 1), {"one": 1.0, "three": 0.5, "two": 0.25})
    assert _list(client, blue)[0]["status"] == "done"  # kept: no queue position shown
    board = client.get("/api/v1/leaderboard/tiny", headers=blue).headers["ETag"]
    _behind_our_back("UPDATE submissions SET status_detail = 'moved'")
    _behind_our_back("UPDATE board_state SET version = version + 1")
    mine = submit(client, red, 2)
    assert [s["id"] for s in _list(client, red)] == [mine]  # at once, as before
    assert _list(client, blue)[0]["status_detail"] != "moved"  # blue's list was kept
    assert client.get("/api/v1/leaderboard/tiny", headers=blue).headers["ETag"] == board
    reply = client.post("/api/v1/admin/teams", json={"name": "green"})  # anything else
    assert reply.status_code == 201
    assert _list(client, blue)[0]["status_detail"] == "moved"


def test_kept_answers_respect_hidden_secrecy_per_scope(client, monkeypatch):  # noqa: F811
    monkeypatch.setattr(readcache, "STALENESS_S", LONG)
    red = contestant(client, "red", "alice")
    judge(submit(client, red, 1), {"one": 1.0, "three": 0.5, "two": 0.25})
    # The organizer reads first, so the cache holds the whole truth: the contestant's
    # answers are still her own scope's.
    assert client.put("/api/v1/admin/contest", json={"hidden_detail": "judged"}).is_success
    assert client.get("/api/v1/leaderboard/tiny").json()["rows"][0]["hidden_score"] is not None
    mine = _list(client, red)[0]
    hidden = [r for r in mine["results"] if r["split"] == "hidden"]
    assert [(r["verdict"], r["score"], r["withheld"]) for r in hidden] == [("JUDGED", None, True)]
    assert mine["hidden_score"] is None
    row = client.get("/api/v1/leaderboard/tiny", headers=red).json()["rows"][0]
    assert row["hidden_score"] is None

    assert client.put("/api/v1/admin/contest", json={"hidden_revealed": True}).is_success
    shown = [r for r in _list(client, red)[0]["results"] if r["split"] == "hidden"]
    assert shown[0]["score"] is not None and not shown[0]["withheld"]  # at once
    row = client.get("/api/v1/leaderboard/tiny", headers=red).json()["rows"][0]
    assert row["hidden_score"] is not None


def test_the_token_is_checked_on_every_cached_read(client, monkeypatch):  # noqa: F811
    monkeypatch.setattr(readcache, "STALENESS_S", LONG)
    red = contestant(client, "red", "alice")
    for path in ("/api/v1/submissions", "/api/v1/leaderboard/tiny", "/problems/tiny"):
        assert client.get(path, headers=red).status_code == 200  # now kept
    tokens = client.get("/api/v1/admin/tokens").json()
    mine = next(t["id"] for t in tokens if t["username"] == "alice")
    assert client.delete(f"/api/v1/admin/tokens/{mine}").status_code == 200
    for path in ("/api/v1/submissions", "/api/v1/leaderboard/tiny"):
        assert client.get(path, headers=red).status_code == 401
    assert client.get("/api/v1/submissions", headers={"Authorization": ""}).status_code == 401


def test_no_cache_when_the_staleness_is_zero(client, monkeypatch):  # noqa: F811
    monkeypatch.setattr(readcache, "STALENESS_S", 0.0)
    red = contestant(client, "red", "alice")
    readcache.clear()
    _list(client, red)
    assert readcache._entries == {}


# --- two API processes, PostgreSQL + Redis ---------------------------------------------------


@pytest.mark.skipif(not os.environ.get("CI"), reason="integration (CI=true)")
@pytest.mark.parametrize("backend", ["postgres+redis", "embedded"])
def test_two_api_processes_hear_each_other(tmp_path: Path, backend: str) -> None:
    """Through Redis pub/sub, or through the news table on the embedded backend."""
    from tests.service import small_package, start_service
    from tests.service import wait_for as until
    from tests.test_event_broadcast import second_api
    from tests.test_service_e2e import backends

    long = {"MEMORACE_READ_STALENESS_S": str(LONG)}  # only the news can refresh them
    planner = Path(__file__).parents[1] / "reference_solutions" / "naive.py"
    with backends(backend) as (db_url, broker_url):
        svc = start_service(tmp_path, [small_package(tmp_path)], db_url, broker_url,
                            extra_env=long)  # fmt: skip
        try:
            other = second_api(svc)
            token = svc.add_team("red", "alice")

            def listed() -> list[dict]:
                reply = svc.api("GET", "/api/v1/submissions", token, params={"limit": 5})
                return reply.json() if reply.status_code == 200 else []

            def listed_there() -> list[dict]:
                svc.url, url = other, svc.url
                try:
                    return listed()
                finally:
                    svc.url = url

            assert listed_there() == [] and listed() == []  # both processes keep it
            sub = svc.submit(token, "mini-gpt2", planner)["id"]  # a write in the first
            # A few tries: the news travels while the reply does (no timing asserted).
            until(lambda: [s["id"] for s in listed_there()] == [sub], 10, "the news of a write")
            svc.start_worker("w1")  # its progress and its end are news too
            until(lambda: listed_there()[0]["status"] == "done", 120, "the judging in api2")
            until(lambda: listed()[0]["status"] == "done", 10, "the judging in api")
            # A revocation in one process reaches the other's token cache by its news
            # (kept tokens live a minute while the news is heard).
            mine = [t["id"] for t in svc.api("GET", "/api/v1/admin/tokens").json()
                    if t["username"] == "alice"]  # fmt: skip
            assert svc.api("DELETE", f"/api/v1/admin/tokens/{mine[0]}").status_code == 200
            svc.url, url = other, svc.url
            try:
                refused = lambda: svc.api("GET", "/api/v1/submissions", token).status_code == 401  # noqa: E731
                until(refused, 10, "the revocation in api2")
            finally:
                svc.url = url
        finally:
            svc.stop()


# --- what a piece of news clears ----------------------------------------------------------


KEPT = ("board", "red", "blue", "green", "admin")


def _fill() -> None:
    """A board, the lists of teams 1 and 2, team 3's showing a queued submission (so
    queue positions), and the organizers' (which shows every team's)."""
    readcache.clear()
    lists, queued = readcache.LISTS, readcache.QUEUED
    scopes = {"board": (readcache.BOARD, "tiny"), "red": (lists, 1), "blue": (lists, 2),
              "green": (queued, 3), "admin": (queued, readcache.ADMIN)}  # fmt: skip
    for key, scope in scopes.items():
        readcache.put(key, key, readcache.generation(), scope)


@pytest.mark.parametrize(
    "item, kept",
    [
        (news.News(7, team=1), {"board", "blue", "green"}),  # a case result of team 1
        (news.News(7, team=3), {"board", "red", "blue"}),  # ... of team 3
        # The queue moved: the lists that show queue positions.
        (news.News(7, queue=True, team=1), {"board", "blue"}),
        (news.News(7, team=1, board=True), {"blue", "green"}),  # a judging ended
        (news.News(0), set()),  # another API process wrote something
        (news.News(0, auth=True), set()),  # ... to a user, a team or a token
    ],
)
def test_news_clears_what_it_changed(monkeypatch, item, kept) -> None:
    monkeypatch.setattr(readcache, "STALENESS_S", LONG)
    _fill()
    readcache.hear(news.parse(news.message(item)))
    assert {k for k in KEPT if readcache.get(k)} == kept


def test_a_value_computed_across_a_clear_of_its_scope_is_not_kept(monkeypatch) -> None:
    monkeypatch.setattr(readcache, "STALENESS_S", LONG)
    readcache.clear()
    gen = readcache.generation()
    readcache.hear(news.News(7, team=1))  # while team 1's and team 2's pages were computed
    readcache.put("red", "old", gen, (readcache.LISTS, 1))
    readcache.put("blue", "fine", gen, (readcache.LISTS, 2))
    assert readcache.get("red") is None and readcache.get("blue") == "fine"


@given(st.integers(0, 10**18 - 1), st.booleans(), st.one_of(st.none(), st.integers(0, 10**18 - 1)),
       st.booleans(), st.booleans(), st.text("0123456789abcdef", max_size=32))  # fmt: skip
def test_news_reads_back_what_was_sent(sub_id, queue, team, board, auth, origin) -> None:
    item = news.News(sub_id, queue, team, board, auth, origin)
    assert news.parse(news.message(item)) == item


def test_entries_live_longer_while_the_news_is_heard(monkeypatch) -> None:
    """While Redis news is heard every write of the service clears what it changed, so
    kept answers live LIVE_S; hearing it start or stop clears everything (news may have
    been lost around it), and without it they live STALENESS_S again."""
    monkeypatch.setattr(readcache, "STALENESS_S", 1e-9)  # passed by the time we look
    monkeypatch.setattr(readcache, "LIVE_S", LONG)
    monkeypatch.setattr(news, "heard", [False])
    _fill()
    assert readcache.get("red") is None
    readcache.hears_news(True)
    assert readcache.get("blue") is None  # the subscription started: everything went
    _fill()
    assert readcache.get("red") == "red"
    readcache.hear(news.News(7, team=1))
    assert readcache.get("red") is None and readcache.get("blue") == "blue"
    readcache.hears_news(False)
    assert readcache.get("blue") is None
    _fill()
    assert readcache.get("blue") is None


def test_a_list_showing_a_queued_submission_is_scoped_to_the_queue(client, monkeypatch):  # noqa: F811
    """Only a page with a queued submission shows queue positions: the queue's news
    (a judging claimed elsewhere) clears it and leaves the others."""
    monkeypatch.setattr(readcache, "STALENESS_S", LONG)
    red, blue = contestant(client, "red", "alice"), contestant(client, "blue", "bob")
    judge(submit(client, red, 1), {"one": 1.0, "three": 0.5, "two": 0.25})
    submit(client, blue, 2)  # waits for a worker
    assert _list(client, red)[0]["queue_position"] is None
    assert _list(client, blue)[0]["queue_position"] == 1
    scopes = {scope for _, scope, _ in readcache._entries.values() if scope[0] != readcache.BOARD}
    assert {kind for kind, _ in scopes} == {readcache.LISTS, readcache.QUEUED}
    readcache.hear(news.News(99, queue=True, team=10**6))  # another team's claim
    kept = {scope[0] for _, scope, _ in readcache._entries.values()}
    assert readcache.QUEUED not in kept and readcache.LISTS in kept


def test_changes_to_who_may_do_what_clear_the_token_caches(client, monkeypatch):  # noqa: F811
    """A revocation or an edited user is news for every process's token cache (auth);
    a token's last-use stamp and a new token are not."""
    published: list[news.News] = []
    monkeypatch.setattr(readcache, "_publish_to", ["redis://127.0.0.1:1/0"])
    monkeypatch.setattr(news, "publish", lambda item, broker_url=None: published.append(item))
    red = contestant(client, "red", "alice")
    assert client.get("/api/v1/submissions", headers=red).status_code == 200
    assert tokencache._entries  # alice's token is kept
    with session_scope(get_settings().database_url) as db:
        touch_token(db, 1)
    assert tokencache._entries and not any(item.auth for item in published)
    tokens = client.get("/api/v1/admin/tokens").json()
    mine = next(t["id"] for t in tokens if t["username"] == "alice")
    assert client.delete(f"/api/v1/admin/tokens/{mine}").status_code == 200
    assert published[-1].auth and tokencache._entries == {}
    tokencache._entries[("x", "y")] = None  # type: ignore[assignment]
    readcache.hear(news.News(0, auth=True))  # another process's revocation
    assert tokencache._entries == {}


def test_what_a_transaction_wrote_becomes_news_that_clears_only_that() -> None:
    """api.reads.invalidation: one team's submission and its judging are that team's news (the
    queue moved); a judging whose submission the session does not hold, another table,
    or two teams say "everything"; the blobs of an upload say nothing."""
    from sqlalchemy.orm import Session, make_transient_to_detached

    from api.db.models import Blob, Judging, Submission, Team
    from api.reads.invalidation import Written

    session = Session()
    sub = Submission(id=5, team_id=1)
    make_transient_to_detached(sub)
    session.add(sub)  # held by the session, as after the upload's first flush
    wrote = Written()
    for obj in (sub, Judging(submission_id=5), Blob()):
        wrote.note_row(obj, session)
    assert wrote.news(auth=False) == news.News(5, True, 1, False, False, news.ORIGIN)
    wrote.note_statement("board_state")
    assert wrote.news(auth=False).board and not wrote.everything
    for other in (Judging(submission_id=99), Team(), Submission(id=6, team_id=2)):
        alone = Written(teams={1}, submissions={5})
        alone.note_row(other, session)
        assert alone.news(auth=False).team is None  # everything goes
    untouched = Written()
    untouched.note_row(Blob(), session)
    untouched.note_statement("api_tokens")
    assert not untouched.anything()
