"""Reads that scale: the leaderboard is computed once per change and answered with an
ETag (304 while nothing moved), the submission list is paged with a fixed number of
SQL queries whatever its length (both backends), and scripts/serve starts one API
process per core (and its worker again when it dies). In-process ASGI client, the
embedded broker; a judging's end is the worker's own code (worker.results.finish) run
on results written as a worker would."""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import httpx
import psutil
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event, select

from api import news, queue
from api.db.models import CaseResultRow, Judging, ProblemVersion
from api.db.session import get_engine, session_scope
from api.settings import get_settings
from tests.service import (
    answers,
    postgres_database,
    serve_script,
    start_service,
    wait_for,
)
from tests.test_package import CASE, GOOD_TOML, make_package
from worker.rescore import rescore_version
from worker.results import finish

THREE_CASES = GOOD_TOML + '\n[[cases]]\nname = "three"\nsplit = "public"\ncapacity = 16\n'


@pytest.fixture(params=["sqlite", "postgresql"])
def client(request, tmp_path, monkeypatch) -> Iterator[TestClient]:
    monkeypatch.setenv("MEMORACE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MEMORACE_RATE_LIMIT", "1000")
    with postgres_database() if request.param == "postgresql" else _nothing() as url:
        if url:
            monkeypatch.setenv("MEMORACE_DATABASE_URL", url)
        get_settings.cache_clear()
        queue.producer.cache_clear()
        from api.app import create_app
        from api.bootstrap import bootstrap

        cases = {"public/one": CASE, "hidden/two": CASE, "public/three": CASE}
        package = make_package(tmp_path / "pkg", THREE_CASES, cases)
        token = bootstrap(get_settings(), "admin", [package])
        with TestClient(create_app()) as c:
            c.headers["Authorization"] = f"Bearer {token}"
            _apps[:] = [c.app]
            yield c
            _apps.clear()
        get_engine(get_settings().database_url).dispose()  # before the database is dropped
        get_settings.cache_clear()
        queue.producer.cache_clear()


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        return None


def contestant(client: TestClient, team: str, user: str) -> dict[str, str]:
    assert client.post("/api/v1/admin/teams", json={"name": team}).status_code == 201
    body = {"username": user, "password": "password123", "team": team}
    assert client.post("/api/v1/admin/users", json=body).status_code == 201
    token = client.post("/api/v1/admin/tokens", json={"username": user}).json()["token"]
    return {"Authorization": f"Bearer {token}"}


def submit(client: TestClient, headers: dict[str, str], n: int) -> int:
    files = {"file": ("p.py", f"print({n})\n".encode())}
    reply = client.post(
        "/api/v1/submissions", headers=headers, data={"problem": "tiny"}, files=files
    )
    assert reply.status_code == 201, reply.text
    return reply.json()["id"]


_apps: list = []  # the client fixture's app: judge() waits until it heard the news


def heard_all_news() -> None:
    """Waits until the fixture's app has read every news row written so far (SQLite's
    news table is read a few times a second: a test must not race its own worker)."""
    url = get_settings().database_url
    if _apps and url.startswith("sqlite"):
        hub, last = _apps[0].state.broadcaster, news.last_row(url)
        wait_for(lambda: hub.table_read >= last, 10, "the news table read", 0.02)


def judge(sub_id: int, scores: dict[str, float]) -> None:
    """The end of a judging as the worker makes it: the results of one attempt, then
    the worker's own finish (scores, status, the submission's board fields), and its
    news heard."""
    url = get_settings().database_url
    with session_scope(url) as db:
        j = db.scalars(select(Judging).where(Judging.submission_id == sub_id)).one()
        j.status, j.attempt, j.worker = "running", 1, "test"
        for case, score in scores.items():
            split = "hidden" if case == "two" else "public"
            db.add(CaseResultRow(judging_id=j.id, case=case, split=split, weight=1.0,
                                 verdict="OK", lower_bound=16, score=score, peak=16))  # fmt: skip
        judging_id = j.id
    finish(url, judging_id, 1, "")
    heard_all_news()


def board(client: TestClient, headers: dict[str, str], etag: str | None = None) -> httpx.Response:
    extra = {"If-None-Match": etag} if etag else {}
    return client.get("/api/v1/leaderboard/tiny", headers=headers | extra)


def test_leaderboard_etag_changes_with_every_move_of_the_board(client):
    red, blue = contestant(client, "red", "alice"), contestant(client, "blue", "bob")
    first = board(client, red)
    assert first.status_code == 200 and first.json()["rows"] == []
    etag = first.headers["ETag"]
    assert board(client, red, etag).status_code == 304  # nothing moved
    submit(client, blue, 1)  # a queued submission is not on the board
    assert board(client, red, etag).status_code == 304

    sub = submit(client, red, 2)
    judge(sub, {"one": 1.0, "three": 0.5, "two": 0.25})  # a judging ends
    moved = board(client, red, etag)
    assert moved.status_code == 200 and moved.headers["ETag"] != etag
    assert [r["team"] for r in moved.json()["rows"]] == ["red"]
    assert moved.json()["rows"][0]["public_score"] == pytest.approx(75.0)
    assert moved.json()["rows"][0]["hidden_score"] is None  # before the reveal
    etag = moved.headers["ETag"]

    # A weight changes nothing until the rescore applies it, which moves the board.
    reply = client.patch("/api/v1/admin/problems/tiny/cases/three", json={"weight": 3})
    assert reply.status_code == 200, reply.text
    assert board(client, red, etag).status_code == 304
    with session_scope(get_settings().database_url) as db:
        version_id = db.scalars(select(ProblemVersion.id)).one()
    assert rescore_version(get_settings(), version_id) == 1
    rescored = board(client, red, etag)
    assert rescored.status_code == 200 and rescored.headers["ETag"] != etag
    assert rescored.json()["rows"][0]["public_score"] == pytest.approx(62.5)
    etag = rescored.headers["ETag"]

    reply = client.put("/api/v1/admin/contest", json={"hidden_revealed": True})  # the reveal
    assert reply.status_code == 200, reply.text
    revealed = board(client, red, etag)
    assert revealed.status_code == 200 and revealed.headers["ETag"] != etag
    assert revealed.json()["rows"][0]["hidden_score"] == pytest.approx(25.0)
    etag = revealed.headers["ETag"]

    assert client.post("/api/v1/admin/disqualify", json={"team": "red", "reason": "x"}).is_success
    gone = board(client, red, etag)
    assert gone.status_code == 200 and gone.json()["rows"] == []
    # Organizers are another class of viewer (their own cached board); the ETag is the
    # answer's own, the same for the same bytes.
    organizers = board(client, {})
    assert (organizers.headers["ETag"] == gone.headers["ETag"]) == (
        organizers.content == gone.content
    )


def test_frozen_board_is_per_team(client):
    red, blue = contestant(client, "red", "alice"), contestant(client, "blue", "bob")
    reply = client.put("/api/v1/admin/contest", json={"freeze_at": "2000-01-01T00:00:00Z"})
    assert reply.status_code == 200, reply.text
    judge(submit(client, red, 1), {"one": 1.0, "three": 1.0, "two": 1.0})
    # After the freeze each team sees its own newer submission, never another team's.
    assert [r["team"] for r in board(client, red).json()["rows"]] == ["red"]
    assert board(client, blue).json()["rows"] == []
    assert board(client, red).headers["ETag"] != board(client, blue).headers["ETag"]
    assert [r["team"] for r in board(client, {}).json()["rows"]] == ["red"]  # organizers


def test_submission_list_pages_in_a_fixed_number_of_queries(client):
    red = contestant(client, "red", "alice")
    ids = [submit(client, red, n) for n in range(6)]
    judge(ids[0], {"one": 1.0, "three": 0.5, "two": 0.25})  # done: hidden results withheld
    small = _queries(client, "/api/v1/submissions", red)
    ids += [submit(client, red, n) for n in range(6, 45)]
    for sub in ids[6:12]:
        judge(sub, {"one": 0.5, "three": 0.5, "two": 1.0})
    large = _queries(client, "/api/v1/submissions?limit=200", red)
    # 14 on both backends (the old list: 36 for 6 rows, 225 for 45); the slack is for
    # the token's once-a-minute last-use stamp.
    assert large <= small + 3 and large <= 20, (small, large)  # per page, not per row

    # The page's rows are exactly what each submission's own answer says (hidden rules,
    # queue positions), newest first.
    rows = client.get("/api/v1/submissions?limit=200", headers=red).json()
    assert [r["id"] for r in rows] == sorted(ids, reverse=True)
    for row in [*rows[:: len(rows) // 9], rows[-1]]:
        assert row == client.get(f"/api/v1/submissions/{row['id']}", headers=red).json()
    assert rows[0]["queue_position"] == 45 - 6 - 1  # the judged ones left the queue
    hidden = [r for r in rows[-1]["results"] if r["split"] == "hidden"]
    assert [(r["withheld"], r["score"]) for r in hidden] == [(True, None)]

    # Paging: a cursor, no overlap, no gap; the default page is 50, the largest 200.
    seen, cursor = [], ""
    while True:
        page = client.get(f"/api/v1/submissions?limit=20{cursor}", headers=red)
        seen += [r["id"] for r in page.json()]
        if "X-Next-Before-Id" not in page.headers:
            break
        cursor = f"&before_id={page.headers['X-Next-Before-Id']}"
    assert seen == sorted(ids, reverse=True)
    assert len(client.get("/api/v1/submissions", headers=red).json()) == 45
    assert client.get("/api/v1/submissions?before_id=0", headers=red).status_code == 422
    assert client.get("/submissions?limit=3", headers=red, follow_redirects=False).is_success


def _queries(client: TestClient, path: str, headers: dict[str, str]) -> int:
    engine = get_engine(get_settings().database_url)
    seen: list[str] = []

    def count(_conn, _cursor, statement, *_args) -> None:  # type: ignore[no-untyped-def]
        seen.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    try:
        assert client.get(path, headers=headers).status_code == 200
    finally:
        event.remove(engine, "before_cursor_execute", count)
    return len(seen)


# --- scripts/serve: N API processes ---------------------------------------------------------


@pytest.mark.serial
def test_scripts_serve_starts_one_api_process_per_core_and_restarts_its_worker(tmp_path):
    extra = {"MEMORACE_API_PROCESSES": "3", "MEMORACE_WORKERS": "2"}
    with serve_script(tmp_path, extra) as (url, data):
        wait_for(lambda: _serving(tmp_path / "serve.log", 3), 120, "3 API processes")
        wait_for(lambda: answers(url), 60, "scripts/serve's API")
        token = {"Authorization": f"Bearer {(data / 'admin.token').read_text().strip()}"}
        with httpx.Client(base_url=url, timeout=30, headers=token) as web:
            slug = web.get("/api/v1/problems").json()[0]["slug"]
            etags = {web.get(f"/api/v1/leaderboard/{slug}").headers["ETag"] for _ in range(30)}
            assert len(etags) == 1  # every process names the same board the same
            # A change made through one process is seen by every other at once (the
            # ETag is the answer's own: a change the board shows).
            assert web.post("/api/v1/admin/disqualify", json={"team": _a_team(web)}).is_success
            assert web.put("/api/v1/admin/contest", json={"hidden_revealed": True}).is_success
            after = {web.get(f"/api/v1/leaderboard/{slug}").headers["ETag"] for _ in range(30)}
            assert len(after) == 1 and after != etags
        # The worker dies (SIGKILL, as the kernel's out-of-memory killer does): scripts/serve
        # starts another, and the service judges again without anyone's help.
        # Two worker slots (MEMORACE_WORKERS), each on a core of its own.
        log = data / "worker.log"
        wait_for(lambda: log.read_text(errors="replace").count(" ready.") == 2, 60, "2 workers")
        wait_for(lambda: len(_claims(log)) == 2, 60, "the workers' core claims")
        if len(os.sched_getaffinity(0)) >= 2:
            assert len(set(_claims(log))) == 2, _claims(log)
        worker, other = _celery_workers(data)
        worker.kill()
        wait_for(lambda: log.read_text(errors="replace").count(" ready.") == 3, 60, "a new worker")
        assert "the worker exited with status 137" in log.read_text(errors="replace")
        assert {w.pid for w in _celery_workers(data)} & {worker.pid, other.pid} == {other.pid}


def _claims(log: Path) -> list[str]:
    """The cores each judging process of the log claimed (worker.tasks.own_cores)."""
    return re.findall(r"judging process \d+: cores ([\d,]+)", log.read_text(errors="replace"))


def _celery_workers(data: Path) -> list[psutil.Process]:
    """The Celery worker main processes of the scripts/serve whose data folder is `data`
    (a pool child's parent is a worker main process too, and is skipped)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "environ"]):
        with suppress(psutil.Error):
            cmd, env = proc.info["cmdline"] or [], proc.info["environ"] or {}
            if "worker.celery_app" in cmd and env.get("MEMORACE_DATA_DIR") == str(data):
                parent = proc.parent()
                if parent is None or "worker.celery_app" not in parent.cmdline():
                    found.append(proc)
    return found


def _serving(log: Path, processes: int) -> bool:
    started = re.findall(r"Started server process \[(\d+)\]", log.read_text(errors="replace"))
    return len(set(started)) >= processes


def _a_team(web: httpx.Client) -> str:
    assert web.post("/api/v1/admin/teams", json={"name": "red"}).status_code == 201
    return "red"


# --- the pool never runs dry under concurrent requests -------------------------------------


@pytest.mark.serial
def test_more_concurrent_requests_than_connections_do_not_stall(tmp_path):
    """Each request holds its connection across threadpool hops; with more requests in
    flight than connections, every thread waited for a connection only a request
    waiting for a thread could return, until the pool's 30 s timeout (500s). Now the
    process lets in only what its pool can serve."""
    env = {"MEMORACE_DB_POOL_SIZE": "4", "MEMORACE_DB_MAX_OVERFLOW": "0"}
    service = start_service(tmp_path, [make_package(tmp_path / "pkg")], extra_env=env)
    try:
        token = service.add_team("red", "alice")
        service.api("GET", "/api/v1/me", token)  # the token's last-use stamp, once

        async def burst() -> list[int]:
            headers = {"Authorization": f"Bearer {token}"}
            async with httpx.AsyncClient(base_url=service.url, headers=headers, timeout=60) as c:
                paths = ["/api/v1/leaderboard/tiny", "/api/v1/submissions"] * 30
                replies = await asyncio.gather(*(c.get(p) for p in paths))
            return [r.status_code for r in replies]

        started = time.monotonic()
        statuses = asyncio.run(burst())
        took = time.monotonic() - started
    finally:
        service.stop()
    assert statuses == [200] * 60 and took < 20, (took, statuses)
