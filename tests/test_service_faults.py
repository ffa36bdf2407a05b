"""Faults: a worker killed with SIGKILL mid-judging, and Redis restarted (losing every
queued message) while submissions wait. Nothing is lost, nothing is judged twice."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import textwrap

import psutil
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from tests.service import postgres_database, redis_server, start_service, wait_for
from tests.test_package import make_package
from tests.test_service_e2e import sandbox_for_tests

# The reaper looks often and declares a worker dead after 4 s without a heartbeat.
FAST_REAPER = {
    "MEMORACE_REAP_INTERVAL_S": "1",
    "MEMORACE_HEARTBEAT_TIMEOUT_S": "4",
    "MEMORACE_REQUEUE_AFTER_S": "3",
}
SLOW_PLANNER = textwrap.dedent(
    """
    import os, time
    time.sleep(1.5)
    out = os.path.join(os.environ['MEMORACE_OUT_DIR'], 'plan.csv')
    open(out, 'w').write('id,offset\\na,0\\nb,8\\n')
    """
)


@pytest.fixture
def stack(tmp_path):
    with postgres_database() as db_url, redis_server() as redis:
        service = start_service(
            tmp_path, [make_package(tmp_path / "pkg")], database_url=db_url, broker_url=redis.url,
            sandbox=sandbox_for_tests(), extra_env=FAST_REAPER,
        )  # fmt: skip
        try:
            yield service, db_url, redis
        finally:
            service.stop()


def judgings(db_url: str, sub_id: int) -> list[tuple]:
    # No pool: a test that polls this must not pile up PostgreSQL connections.
    with create_engine(db_url, poolclass=NullPool).connect() as conn:
        return [
            tuple(r)
            for r in conn.execute(
                text(
                    "SELECT j.id, j.status, j.attempt, j.reason, "
                    "(SELECT count(*) FROM case_results c WHERE c.judging_id = j.id), "
                    '(SELECT count(DISTINCT c."case") FROM case_results c '
                    "WHERE c.judging_id = j.id) "
                    "FROM judgings j WHERE j.submission_id = :s ORDER BY j.id"
                ),
                {"s": sub_id},
            )
        ]


def test_worker_killed_mid_judging_finishes_once(stack, tmp_path):
    service, db_url, _ = stack
    token = service.add_team("red", "alice")
    planner = tmp_path / "slow.py"
    planner.write_text(SLOW_PLANNER)
    sub = service.submit(token, "tiny", planner)
    service.start_worker("w1")

    def one_case_done() -> bool:
        body = service.api("GET", f"/api/v1/submissions/{sub['id']}", token).json()
        return body["status"] == "running" and body["cases_done"] >= 1

    wait_for(one_case_done, 120, "the first case result")
    w1 = psutil.Process(service.procs["w1"].pid)
    owners = {f"{socket.gethostname()}:{p.pid}" for p in [w1, *w1.children(recursive=True)]}
    running = sandbox_containers(owners)  # the killed worker's container (other tests' aside)
    service.kill("w1", signal.SIGKILL)  # the worker and its pool child, mid-judging
    service.start_worker("w2")
    done = service.wait_done(token, sub["id"], timeout=180)
    assert done["status"] == "done", done["status_detail"]
    assert {r["verdict"] for r in done["results"]} == {"OK"}
    rows = judgings(db_url, sub["id"])
    assert len(rows) == 1, rows  # exactly one judging, final
    _, status, attempt, reason, results, distinct = rows[0]
    assert status == "final" and attempt == 2, rows
    assert "stopped answering" in reason or "lost" in reason, reason
    assert results == distinct == done["cases_total"]  # no duplicate case results
    if service.env["MEMORACE_SANDBOX"] == "docker":  # the dead worker's container is gone too
        assert running and not set(running) & set(sandbox_containers(owners))


def sandbox_containers(owners: set[str]) -> list[str]:
    """Ids of the sandbox containers that exist now and were made by one of `owners`
    (host:pid; tests beside this one judge in docker too). None without a Docker engine."""
    if shutil.which("docker") is None:
        return []
    listed = subprocess.run(
        ["docker", "ps", "-a", "--no-trunc", "--filter", "label=memorace.sandbox",
         "--format", '{{.ID}} {{.Label "memorace.owner"}}'],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    rows = (line.split(" ", 1) for line in listed.stdout.splitlines())
    return [row[0] for row in rows if len(row) == 2 and row[1] in owners]


def test_redis_restart_loses_no_submission(stack, tmp_path):
    service, db_url, redis = stack
    token = service.add_team("red", "alice")
    ids = []
    for i in range(3):
        planner = tmp_path / f"p{i}.py"
        planner.write_text(SLOW_PLANNER + f"# variant {i}\n")
        ids.append(service.submit(token, "tiny", planner)["id"])
    redis.restart()  # nothing is saved: the three queued messages are gone
    service.start_worker("w1")
    for sub_id in ids:
        done = service.wait_done(token, sub_id, timeout=180)
        assert done["status"] == "done", done["status_detail"]
        rows = judgings(db_url, sub_id)
        assert [r[1] for r in rows] == ["final"], rows
        assert rows[0][4] == rows[0][5] == done["cases_total"]
        assert "re-sent" in rows[0][3]  # the reaper says why it was sent again


def test_redis_restart_loses_no_package_import(stack, tmp_path):
    from tests.test_upload_attacks import package_zip

    service, _, redis = stack
    files = {"file": ("lost-pkg.zip", package_zip(tmp_path, "lost-pkg"))}
    reply = service.api("POST", "/api/v1/admin/problems", files=files)
    assert reply.status_code == 202, reply.text
    redis.restart()  # the queued import message is gone
    service.start_worker("w1")

    def finished() -> dict | None:
        body = service.api("GET", reply.json()["url"]).json()
        return body if body["status"] in ("done", "failed") else None

    body = wait_for(finished, 120, "the re-sent import job", every=0.5)
    assert (body["status"], body["problem"], body["version"]) == ("done", "lost-pkg", 1), body
    versions = service.api("GET", "/api/v1/problems/lost-pkg").json()
    assert versions.get("version", 1) == 1  # re-sent messages never import twice
