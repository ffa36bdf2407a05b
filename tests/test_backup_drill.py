"""The backup drill, on both backends: a running service with teams, judged
submissions, a problem with hidden cases and an uploaded package is backed up
(`python -m api.backup create`) while a submission is being judged; the host's data
is wiped (the data directory, the PostgreSQL database, Redis's queue); the backup is
restored (`python -m api.backup restore`) and the service started again shows the
same leaderboards, submissions, results and plan pictures to the same tokens, ends
the interrupted judging (the reaper re-sends it) and judges a new submission alike.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.guides import DOCS, blocks
from tests.service import (
    PG_ADMIN_URL,
    ROOT,
    RedisServer,
    Service,
    postgres_database,
    redis_server,
    start_service,
    wait_for,
)
from tests.test_hidden_secrecy import CASES, PLANNER, SLUG, TOML

GUIDE = DOCS / "operator" / "backup.md"  # its sh blocks are the drill's backup and restore

UPLOADED = "secret-upload"
# Sleeps on each case: still judging when the backup is made, whatever the machine.
SLOW = "import time\ntime.sleep(4)\n" + PLANNER
# The restored host notices the dead worker's judging within seconds (worker.reaper).
REAPER = {"MEMORACE_HEARTBEAT_TIMEOUT_S": "3", "MEMORACE_REQUEUE_AFTER_S": "3",
          "MEMORACE_REAP_INTERVAL_S": "1"}  # fmt: skip


@contextmanager
def backends(kind: str) -> Iterator[tuple[str | None, str | None, RedisServer | None]]:
    """(database URL, broker URL, the Redis server): the embedded defaults, or a fresh
    PostgreSQL database and a private Redis (which the drill restarts empty)."""
    if kind == "embedded":
        yield None, None, None
        return
    with postgres_database() as db_url, redis_server() as redis:
        yield db_url, redis.url, redis


def package(tmp: Path, slug: str) -> Path:
    root = tmp / slug
    for split in ("public", "hidden"):
        (root / "data" / split).mkdir(parents=True)
    (root / "problem.toml").write_text(TOML.replace(f'slug = "{SLUG}"', f'slug = "{slug}"'))
    (root / "statement.md").write_text(f"# {slug}\n")
    for name, text in CASES.items():
        (root / "data" / f"{name}.csv").write_text(text)
    return root


def guide_step(service: Service, folder: Path, action: str) -> subprocess.CompletedProcess[str]:
    """The operator's guide's block for `action` (create, restore), as written, from a
    folder standing for the checkout (its .venv), where backup.tar lands."""
    (step,) = [b for b in blocks(GUIDE.read_text(), "sh") if f"api.backup {action}" in b]
    venv = folder / ".venv"
    if not venv.exists():
        venv.symlink_to(ROOT / ".venv")
    return subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + step], cwd=folder, env=service.env,
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def picture(service: Service, token: str, sub_id: int) -> str:
    """The public case's plan picture, as its page draws it."""
    page = service.api("GET", f"/submissions/{sub_id}?case=pub", token)
    assert page.status_code == 200, page.text[-500:]
    found = re.search(r'<div class="svg">(.*?)</div>', page.text, re.S)
    assert found, "no plan picture on the page"
    return found.group(1)


def state(service: Service, tokens: dict[str, str], judged: list[int]) -> dict[str, Any]:
    """What each team and the organizer read about the judged work."""
    seen: dict[str, Any] = {}
    for who, token in tokens.items():
        for slug in (SLUG, UPLOADED):
            reply = service.api("GET", f"/api/v1/leaderboard/{slug}", token)
            assert reply.status_code == 200, reply.text
            seen[f"{who} board {slug}"] = reply.json()
        mine = service.api("GET", "/api/v1/submissions", token).json()
        seen[f"{who} list"] = [s for s in mine if s["id"] in judged]
        # The organizer has no team (an empty list of its own) and reads them all.
        ids = judged if who == "organizer" else [s["id"] for s in seen[f"{who} list"]]
        for sub_id in ids:
            reply = service.api("GET", f"/api/v1/submissions/{sub_id}", token)
            seen[f"{who} {sub_id}"] = reply.json()
            seen[f"{who} {sub_id} picture"] = picture(service, token, sub_id)
    return seen


def wipe(service: Service, db_url: str | None, redis: RedisServer | None) -> None:
    """The host loses everything: data directory, database, queued messages."""
    shutil.rmtree(service.data_dir)
    if db_url:
        import psycopg

        name = db_url.rsplit("/", 1)[1]
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
    if redis is not None:
        redis.restart()


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["embedded", "postgres+redis"])
def test_backup_while_judging_then_restore_on_a_wiped_host(backend: str, tmp_path: Path) -> None:
    with backends(backend) as (db_url, broker_url, redis):
        service = start_service(tmp_path, [package(tmp_path, SLUG)], db_url, broker_url,
                                workers=("w1",))  # fmt: skip
        try:
            tokens, judged, slow = prepare(service, tmp_path)
            before = state(service, tokens, judged)
            assert len(before["red list"]) == len(before["blue list"]) == 2
            assert all("<svg" in v for k, v in before.items() if k.endswith("picture"))
            assert all(before[f"organizer board {slug}"] for slug in (SLUG, UPLOADED))
            made = guide_step(service, tmp_path, "create")
            assert made.returncode == 0, made.stderr[-3000:]
            print(made.stdout.strip())
            sub = service.api("GET", f"/api/v1/submissions/{slow}", tokens["red"]).json()
            assert sub["status"] in ("queued", "running"), sub  # the backup saw it judged
        finally:
            service.stop(warm=False)  # the host dies mid-judging
        wipe(service, db_url, redis)
        done = guide_step(service, tmp_path, "restore")
        assert done.returncode == 0, done.stderr[-3000:]
        print(done.stdout.strip())
        again = Service(service.data_dir, service.env | REAPER)
        again.admin_token = service.admin_token  # the old organizer token, restored
        try:
            again.start_api()
            assert state(again, tokens, judged) == before
            again.start_worker("w1")
            ended = again.wait_done(tokens["red"], slow, timeout=180)
            assert ended["status"] == "done", ended
            first = again.api("GET", f"/api/v1/submissions/{judged[0]}", tokens["red"]).json()
            assert ended["public_score"] == first["public_score"]
            fresh = again.submit(tokens["red"], SLUG, tmp_path / "planner.py")["id"]
            rejudged = again.wait_done(tokens["red"], fresh, timeout=180)
            assert rejudged["hidden_score"] == first["hidden_score"]  # the same hidden cases
            assert rejudged["public_score"] == first["public_score"]
        finally:
            again.stop(warm=False)


def prepare(service: Service, tmp: Path) -> tuple[dict[str, str], list[int], int]:
    """Two teams' judged submissions on the bootstrapped problem and on an uploaded
    one, then a slow one of the first team, judged now; (tokens, judged ids, slow id)."""
    job = service.import_package(package(tmp / "upload", UPLOADED))
    assert job["status"] == "done", job
    tokens = {"red": service.add_team("red", "alice"), "blue": service.add_team("blue", "bob")}
    tokens["organizer"] = service.admin_token
    planner, slow = tmp / "planner.py", tmp / "slow.py"
    planner.write_text(PLANNER)
    slow.write_text(SLOW)
    judged = []
    for team in ("red", "blue"):
        for slug in (SLUG, UPLOADED):
            sub_id = service.submit(tokens[team], slug, planner)["id"]
            assert service.wait_done(tokens[team], sub_id, 120)["status"] == "done"
            judged.append(sub_id)
    slow_id = service.submit(tokens["red"], SLUG, slow)["id"]

    def running() -> bool:
        reply = service.api("GET", f"/api/v1/submissions/{slow_id}", tokens["red"])
        return reply.json()["status"] == "running"

    wait_for(running, 60, "the slow submission to be judged")
    return tokens, judged, slow_id
