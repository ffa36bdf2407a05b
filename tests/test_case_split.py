"""A judging's cases judged side by side by several workers (worker.cases), on both
backends, in the sandbox CI judges in: the cases spread; a helper SIGKILLed in the
middle loses no case (its judging's owner takes the case over) and an owner SIGKILLed
in the middle is restarted by the reaper; either way one final judging with each case
stored once, and a rescore of a split judging equals it."""

from __future__ import annotations

import signal
import textwrap
from pathlib import Path

import psutil
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from tests.service import Service, start_service, wait_for, worker_pid
from tests.test_package import CASE, make_package
from tests.test_service_e2e import backends, sandbox_for_tests
from tests.test_service_faults import FAST_REAPER, judgings

CASE_S = 2.0  # each case's planner sleeps this long
NAMES = [("public", f"p{k}") for k in range(1, 4)] + [("hidden", f"h{k}") for k in range(1, 4)]
PLANNER = textwrap.dedent(
    f"""
    import os, time
    time.sleep({CASE_S})
    out = os.path.join(os.environ['MEMORACE_OUT_DIR'], 'plan.csv')
    open(out, 'w').write('id,offset\\na,0\\nb,8\\n')
    """
)


def six_cases(root: Path) -> Path:
    toml = ['slug = "tiny"', 'name = "Six"', 'type = "offset"', "version = 1", "",
            "[limits]", "time_limit_s = 20.0", "memory_limit_mb = 512", ""]  # fmt: skip
    for split, name in NAMES:
        toml += ["[[cases]]", f'name = "{name}"', f'split = "{split}"', "capacity = 16", ""]
    return make_package(root, "\n".join(toml), {f"{s}/{n}": CASE for s, n in NAMES})


@pytest.fixture(params=["embedded", "postgres+redis"])
def stack(request, tmp_path):
    with backends(request.param) as (db_url, broker_url):
        service = start_service(
            tmp_path, [six_cases(tmp_path / "pkg")], database_url=db_url, broker_url=broker_url,
            sandbox=sandbox_for_tests(), extra_env=FAST_REAPER,
        )  # fmt: skip
        try:
            yield service, db_url or f"sqlite:///{service.data_dir}/db.sqlite"
        finally:
            service.stop(warm=False)


def case_runs(db_url: str, judging_id: int) -> list[tuple]:
    with create_engine(db_url, poolclass=NullPool).connect() as conn:
        return [
            tuple(r)
            for r in conn.execute(
                text(
                    'SELECT "case", attempt, worker, status, takeovers FROM case_runs '
                    "WHERE judging_id = :j ORDER BY id"
                ),
                {"j": judging_id},
            )
        ]


def pids(service: Service, name: str) -> set[int]:
    """A worker's main process and its pool children (their pids name them in case_runs)."""
    main = psutil.Process(service.procs[name].pid)
    return {main.pid, *(p.pid for p in main.children(recursive=True))}


def runs_of(runs: list[tuple], worker_pids: set[int]) -> list[tuple]:
    return [r for r in runs if worker_pid(r[2]) in worker_pids]


def submit_and_start(service: Service, tmp_path: Path, owner_beat: bool) -> tuple[str, dict]:
    """w1 owns the judging (the only worker when it starts); w2 starts once it runs, and
    takes w1's helper messages."""
    token = service.add_team("red", "alice")
    planner = tmp_path / "planner.py"
    planner.write_text(PLANNER)
    service.start_worker("w1", beat=owner_beat)
    sub = service.submit(token, "tiny", planner)

    def running() -> bool:
        body = service.api("GET", f"/api/v1/submissions/{sub['id']}", token).json()
        return body["status"] == "running"

    wait_for(running, 60, "the judging to start")
    service.start_worker("w2", beat=not owner_beat)
    return token, sub


def judging_of(service: Service, token: str, sub_id: int) -> int:
    return service.api("GET", f"/api/v1/submissions/{sub_id}", token).json()["judging_id"]


def assert_once(db_url: str, sub_id: int, attempt: int) -> tuple:
    rows = judgings(db_url, sub_id)
    assert len(rows) == 1, rows  # exactly one judging, final
    _, status, got_attempt, _, results, distinct = rows[0]
    assert (status, got_attempt) == ("final", attempt), rows
    assert results == distinct == len(NAMES), rows  # each case stored once
    return rows[0]


def assert_hidden_after_public(db_url: str, judging_id: int) -> None:
    """Every hidden case of the judging started after every public one was done (a run's
    heartbeat_at is when it was marked done; both times are the workers' clock)."""
    with create_engine(db_url, poolclass=NullPool).connect() as conn:
        rows = conn.execute(
            text('SELECT "case", started_at, heartbeat_at FROM case_runs WHERE judging_id = :j'),
            {"j": judging_id},
        ).all()
    public_done = max(r[2] for r in rows if r[0].startswith("p"))
    hidden_start = min(r[1] for r in rows if r[0].startswith("h"))
    assert hidden_start >= public_done, rows


def test_a_killed_helper_loses_no_case(stack, tmp_path):
    service, db_url = stack
    token, sub = submit_and_start(service, tmp_path, owner_beat=True)
    owner = pids(service, "w1")

    def helper_runs() -> list | None:
        jid = judging_of(service, token, sub["id"])
        runs = case_runs(db_url, jid) if jid else []
        mine = [r for r in runs_of(runs, pids(service, "w2")) if r[3] == "running"]
        return mine or None

    wait_for(helper_runs, 90, "w2 to run a case of w1's judging", 0.1)
    service.kill("w2", signal.SIGKILL)  # the helper, mid-case
    done = service.wait_done(service.admin_token, sub["id"], timeout=180)
    assert done["status"] == "done", done["status_detail"]
    assert {r["verdict"] for r in done["results"]} == {"OK"}
    _, _, _, reason, _, _ = assert_once(db_url, sub["id"], attempt=1)
    assert "stopped answering; taken over" in reason, reason
    runs = case_runs(db_url, done["judging_id"])
    assert sorted(r[0] for r in runs) == sorted(n for _, n in NAMES), runs
    assert all(r[3] == "done" for r in runs), runs
    assert any(r[4] >= 1 for r in runs_of(runs, owner)), runs  # the owner took one over
    # Public cases are all taken before any hidden one, and done before any hidden one
    # starts (the helper's public case too, taken over): none runs beside a hidden one.
    order = [r[0] for r in runs]
    assert order.index("h1") > max(order.index(f"p{k}") for k in (1, 2, 3)), order
    assert_hidden_after_public(db_url, done["judging_id"])

    # A rescore re-verifies the kept plans: the judging again, case by case.
    assert service.api("POST", "/api/v1/admin/problems/tiny/rescore").status_code == 202

    def rescored() -> dict | None:
        body = service.api("GET", f"/api/v1/submissions/{sub['id']}").json()
        return body if body["judging_id"] != done["judging_id"] else None

    after = wait_for(rescored, 60, "the rescore")
    keys = ("case", "split", "verdict", "score", "peak", "lower_bound", "plan_digest")
    assert [[r[k] for k in keys] for r in after["results"]] == [
        [r[k] for k in keys] for r in done["results"]
    ]
    assert (after["public_score"], after["hidden_score"]) == (
        done["public_score"],
        done["hidden_score"],
    )


def test_a_killed_owner_restarts_the_judging_once(stack, tmp_path):
    service, db_url = stack
    token, sub = submit_and_start(service, tmp_path, owner_beat=False)

    def both_run() -> bool:
        jid = judging_of(service, token, sub["id"])
        runs = case_runs(db_url, jid) if jid else []
        return bool(runs_of(runs, pids(service, "w2"))) and bool(runs_of(runs, pids(service, "w1")))

    wait_for(both_run, 90, "w1 and w2 to judge cases of one judging", 0.1)
    service.kill("w1", signal.SIGKILL)  # the owner, mid-judging; w2 runs the reaper
    done = service.wait_done(service.admin_token, sub["id"], timeout=240)
    assert done["status"] == "done", done["status_detail"]
    assert {r["verdict"] for r in done["results"]} == {"OK"}
    _, _, _, reason, _, _ = assert_once(db_url, sub["id"], attempt=2)
    assert "stopped answering" in reason or "lost" in reason, reason
    runs = case_runs(db_url, done["judging_id"])
    assert {r[1] for r in runs} == {2}, runs  # the first attempt's claims went with it
    assert sorted(r[0] for r in runs) == sorted(n for _, n in NAMES), runs
    assert_hidden_after_public(db_url, done["judging_id"])
