"""The reaper during a backlog: beat runs it on its clock while every worker is busy
judging (it used to wait in the queue behind the judgings), it re-sends only the
judging whose worker was killed (a backlog is not a lost message), and every
submission of the backlog ends judged exactly once."""

from __future__ import annotations

import os
import re
import signal
import textwrap
import time
from datetime import datetime
from itertools import pairwise

import pytest

from tests.service import VENV_BIN, start_service, wait_for
from tests.test_package import make_package
from tests.test_service_e2e import backends, sandbox_for_tests
from tests.test_service_faults import judgings as rows  # one tuple per judging

# 20 judgings on each backend (MEMORACE_TEST_REAPER_BACKLOG for another count; issue
# 10's acceptance run uses 50): they wait in the queue behind the killed worker and the
# new workers' start, past MEMORACE_REQUEUE_AFTER_S, and the backlog lasts many reaper
# passes.
BACKLOG = int(os.environ.get("MEMORACE_TEST_REAPER_BACKLOG") or 20)
REAP_INTERVAL_S = 1.0
# Re-send after 3 s: every judging of the backlog waits longer than that in the queue,
# so a reaper that took waiting for lost would re-send nearly all of them.
FAST_REAPER = {
    "MEMORACE_REAP_INTERVAL_S": str(REAP_INTERVAL_S),
    "MEMORACE_HEARTBEAT_TIMEOUT_S": "6",
    "MEMORACE_REQUEUE_AFTER_S": "3",
    "MEMORACE_RATE_LIMIT": "1000",
}
PLANNER = textwrap.dedent(
    """
    import os, time
    time.sleep({sleep})
    out = os.path.join(os.environ['MEMORACE_OUT_DIR'], 'plan.csv')
    open(out, 'w').write('id,offset\\na,0\\nb,8\\n')
    # variant {variant}
    """
)
STAMP = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})")


@pytest.mark.serial
@pytest.mark.parametrize("kind", ["postgres+redis", "embedded"])
def test_reaper_on_time_during_backlog_resends_only_the_lost(kind, tmp_path):
    with backends(kind) as (db_url, broker_url):
        service = start_service(
            tmp_path, [make_package(tmp_path / "pkg")], database_url=db_url,
            broker_url=broker_url, sandbox=sandbox_for_tests(), extra_env=FAST_REAPER,
        )  # fmt: skip
        try:
            run_backlog(service, db_url or f"sqlite:///{service.data_dir}/db.sqlite", BACKLOG)
        finally:
            service.stop()


def run_backlog(service, db_url: str, backlog: int) -> None:
    token = service.add_team("red", "alice")
    planners = service.data_dir.parent

    def submit(i: int) -> int:  # the first one slow: its worker is killed while it runs
        (planners / f"p{i}.py").write_text(PLANNER.format(sleep=3.0 if i == 0 else 0, variant=i))
        return service.submit(token, "tiny", planners / f"p{i}.py")["id"]

    ids = [submit(i) for i in range(backlog // 2)]
    started, began = time.monotonic(), datetime.now()
    schedule = str(service.data_dir / "beat-schedule")
    service._spawn("beat", [str(VENV_BIN / "celery"), "-A", "worker.celery_app", "beat",
                            "--loglevel", "INFO", "-s", schedule])  # fmt: skip
    service.start_worker("w1", beat=False)
    wait_for(lambda: rows(db_url, ids[0])[0][1:2] == ("running",) and rows(db_url, ids[0])[0][4],
             120, "the slow judging's first case")  # fmt: skip
    service.kill("w1", signal.SIGKILL)  # the worker and its pool child, mid-judging
    # Submissions keep coming during the backlog: they queue behind whatever the
    # queue holds (a reaper that was a queue message found them waiting and re-sent them).
    ids += [submit(i) for i in range(backlog // 2, backlog)]
    for name in ("w2", "w3"):  # side by side: each spends seconds importing
        service.start_worker(name, beat=False, wait=False)
    service.wait_ready("w2", "w3")
    for sub_id in ids:
        done = service.wait_done(token, sub_id, timeout=240)
        assert done["status"] == "done", done["status_detail"]
    ended, total = datetime.now(), time.monotonic() - started

    judged = {sub_id: rows(db_url, sub_id) for sub_id in ids}
    resent = [s for s, r in judged.items() if any("re-sent" in (j[3] or "") for j in r)]
    assert not resent, f"healthy queued judgings re-sent: {resent}"
    for sub_id, js in judged.items():
        assert len(js) == 1, js  # exactly one judging per submission, final
        _, status, attempt, _, results, distinct = js[0]
        assert status == "final" and results == distinct == 2, js  # no duplicate case row
        assert attempt == (2 if sub_id == ids[0] else 1), js
    assert "stopped answering" in judged[ids[0]][0][3]  # the killed one, judged again once

    stamps = reaper_runs(service.log("beat"))
    during = [began] + [t for t in stamps if began <= t <= ended] + [ended]
    gaps = [(b - a).total_seconds() for a, b in pairwise(during)]
    print(f"{backlog} judgings: {total:.1f} s, {len(during) - 2} reaper runs, "
          f"gap mean {sum(gaps) / len(gaps):.2f} s, max {max(gaps):.2f} s")  # fmt: skip
    # Every REAP_INTERVAL_S (1 s); wide margin for a loaded machine and beat's start.
    assert len(during) - 2 >= total / 5 and max(gaps) <= 15, (len(during), gaps)


def reaper_runs(log: str) -> list[datetime]:
    """When each reaper pass ended, from beat's log (JSON or plain lines)."""
    found = []
    for line in log.splitlines():
        if "reaper ran" in line and (m := STAMP.search(line)):
            found.append(datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f"))
    return found


@pytest.mark.parametrize("kind", ["redis", "embedded"])
def test_broker_look_sees_waiting_and_just_taken_messages(kind, tmp_path, monkeypatch):
    """What the reaper counts as held by the broker: waiting messages on both brokers;
    on Redis also one a worker took and has not acknowledged, for the given window."""
    from contextlib import nullcontext

    from api import queue
    from api.settings import get_settings
    from tests.service import redis_server

    with redis_server() if kind == "redis" else nullcontext() as redis:
        monkeypatch.setenv("MEMORACE_DATA_DIR", str(tmp_path))
        if redis:
            monkeypatch.setenv("MEMORACE_BROKER_URL", redis.url)
        for cached in (get_settings, queue.producer):
            cached.cache_clear()
        try:
            queue.enqueue_judging(7, queue.PRIORITY_REJUDGE)
            queue.enqueue_judging(8)
            queue.enqueue_import(9)
            assert queue.messages_in_broker(queue.JUDGE_TASK) == {7, 8}
            assert queue.messages_in_broker(queue.IMPORT_TASK) == {9}
            with queue.producer().connection_for_read() as conn:
                taken = conn.SimpleQueue(queue.QUEUE).get(timeout=5)  # not acknowledged
                assert taken.headers["task"] in (queue.JUDGE_TASK, queue.IMPORT_TASK)
                left = queue.messages_in_broker(queue.JUDGE_TASK) | queue.messages_in_broker(
                    queue.IMPORT_TASK
                )
                assert len(left) == 2  # it no longer waits
                held = queue.messages_in_broker(queue.JUDGE_TASK, 60) | queue.messages_in_broker(
                    queue.IMPORT_TASK, 60
                )
                assert held == ({7, 8, 9} if kind == "redis" else left)
        finally:
            for cached in (get_settings, queue.producer):
                cached.cache_clear()
