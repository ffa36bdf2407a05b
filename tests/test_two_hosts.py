"""Workers on other hosts (issue 10): the API and two workers, each with its own data
folder and scratch as on separate machines, sharing only PostgreSQL and Redis. Uploads,
plans and packages travel through the database blob store (api.blobs).

Submissions are judged on both workers; with worker A stopped, a rescore on worker B
re-verifies the plans A stored (B fetches them into its own cache); B restarted with
its data folder and cache wiped still judges, and imports a package uploaded to the
API. A judging's cases spread over both hosts with one build (worker.cases).
"""

from __future__ import annotations

import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from sqlalchemy import create_engine, text

from tests.conftest import ROOT
from tests.service import (
    Service,
    postgres_database,
    redis_server,
    small_package,
    start_service,
    wait_for,
    worker_pid,
)

PROBLEM = "mini-gpt2"
NEW_PROBLEM = "mini-new"
PLANNER = ROOT / "reference_solutions" / "naive.py"


@pytest.fixture
def scratch_root() -> Iterator[Path]:
    """Where the hosts' scratch folders go: traversable by the local sandbox's planner
    user (pytest's own tmp_path is owner-only)."""
    root = Path(tempfile.mkdtemp(prefix="memorace-hosts-"))
    root.chmod(0o711)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def host_env(tmp: Path, scratch: Path, name: str) -> dict[str, str]:
    """Another machine: its own data folder (blob cache inside) and scratch."""
    return {
        "MEMORACE_DATA_DIR": str(tmp / f"host-{name}"),
        "TMPDIR": str(scratch / f"host-{name}"),
    }


def planner_copy(tmp: Path, i: int) -> Path:
    """The same planner with different bytes: a new submission each time."""
    path = tmp / f"planner{i}.py"
    path.write_text(PLANNER.read_text() + f"\n# copy {i}\n")
    return path


def _query(db_url: str, sql: str, **params: object) -> list[tuple]:
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(text(sql), params)]
    finally:
        engine.dispose()


def judged_by(db_url: str, sub_ids: list[int]) -> dict[int, str]:
    return dict(_query(
        db_url, "SELECT submission_id, worker FROM judgings WHERE kind = 'judge' "
        "AND status = 'final' AND submission_id = ANY(:ids)", ids=sub_ids,
    ))  # fmt: skip


def plan_digests(db_url: str, sub_ids: list[int], kind: str) -> set[str]:
    return {d for (d,) in _query(
        db_url, "SELECT r.plan_digest FROM case_results r JOIN judgings j "
        "ON j.id = r.judging_id WHERE j.kind = :kind AND j.status = 'final' "
        "AND r.plan_digest IS NOT NULL AND j.submission_id = ANY(:ids)", kind=kind, ids=sub_ids,
    )}  # fmt: skip


def results(db_url: str) -> list[tuple]:
    """Every case result, to say why when a check fails."""
    return _query(
        db_url, "SELECT j.submission_id, j.kind, j.worker, r.case, r.verdict, r.message, r.log "
        "FROM case_results r JOIN judgings j ON j.id = r.judging_id",
    )  # fmt: skip


def cached(tmp: Path, host: str, digest: str) -> bool:
    return (tmp / f"host-{host}" / "cache" / digest[:2] / digest).is_file()


def submit_until_both_judge(service: Service, token: str, tmp: Path, db_url: str) -> list[int]:
    """Pairs of submissions at once until each worker has judged one (usually the first
    pair: each worker holds one task at a time)."""
    ids: list[int] = []
    for round_ in range(5):
        pair = [service.submit(token, PROBLEM, planner_copy(tmp, 2 * round_ + k)) for k in (0, 1)]
        for sub in pair:
            done = service.wait_done(token, sub["id"], timeout=120)
            assert done["status"] == "done", done["status_detail"]
            assert "JUDGE_ERROR" not in done["status_detail"], done["status_detail"]
        ids += [sub["id"] for sub in pair]
        workers = judged_by(db_url, ids)
        if len({worker_pid(w) for w in workers.values()}) >= 2:
            return ids
    raise AssertionError(f"one worker judged everything: {judged_by(db_url, ids)}")


def test_workers_on_two_hosts_share_only_postgres_and_redis(tmp_path, scratch_root):
    with postgres_database() as db_url, redis_server() as redis:
        service = start_service(
            tmp_path, [small_package(tmp_path)], database_url=db_url, broker_url=redis.url
        )
        try:
            _run(service, tmp_path, scratch_root, db_url)
        finally:
            service.stop()


def _run(service: Service, tmp: Path, scratch: Path, db_url: str) -> None:
    # Side by side: each spends seconds importing.
    service.start_worker("A", beat=True, env=host_env(tmp, scratch, "A"), wait=False)
    service.start_worker("B", beat=False, env=host_env(tmp, scratch, "B"), wait=False)
    service.wait_ready("A", "B")
    token = service.add_team("red", "alice")
    ids = submit_until_both_judge(service, token, tmp, db_url)
    workers = judged_by(db_url, ids)
    pids_a = _pids(service, "A")
    on_a = [sub for sub, worker in workers.items() if str(worker_pid(worker)) in pids_a]
    assert on_a, workers

    # Worker A goes; B rescores, fetching the plans that A stored.
    service.kill("A", signal.SIGTERM)
    from_a = plan_digests(db_url, on_a, "judge")
    assert from_a, results(db_url)
    assert not any(cached(tmp, "B", d) for d in from_a)
    assert service.api("POST", f"/api/v1/admin/problems/{PROBLEM}/rescore").status_code == 202

    def rescored() -> bool:
        return plan_digests(db_url, on_a, "rescore") == from_a

    wait_for(rescored, 60, "the rescore of A's submissions")
    assert all(cached(tmp, "B", d) for d in from_a)  # re-verified from B's own copy
    verdicts = {(r[0], r[3], r[1]): r[4] for r in results(db_url) if r[0] in on_a}
    for (sub_id, case, kind), verdict in verdicts.items():
        assert verdict == verdicts[(sub_id, case, "judge")] == "OK", (sub_id, case, kind)
    assert not any((service.data_dir / "blobs").rglob("*"))  # nothing on the API's disk
    case = sorted((tmp / PROBLEM / "data" / "public").iterdir())[0]  # the API reads it too
    reply = service.api("GET", f"/api/v1/problems/{PROBLEM}/cases/{case.stem}", token)
    assert reply.status_code == 200 and reply.content == case.read_bytes()

    # B restarted on a blank disk: no data folder, no cache, no scratch. It imports a
    # package uploaded to the API, and judges on both problems.
    service.kill("B", signal.SIGTERM)
    shutil.rmtree(tmp / "host-B")
    shutil.rmtree(scratch / "host-B")
    service.start_worker("B2", beat=False, env=host_env(tmp, scratch, "B"))
    assert service.import_package(small_package(tmp / "new", NEW_PROBLEM))["status"] == "done"
    for problem, i in ((PROBLEM, 98), (NEW_PROBLEM, 99)):
        sub = service.submit(token, problem, planner_copy(tmp, i))
        done = service.wait_done(token, sub["id"], timeout=120)
        assert done["status"] == "done" and "JUDGE_ERROR" not in done["status_detail"], done
        assert str(worker_pid(judged_by(db_url, [sub["id"]])[sub["id"]])) in _pids(service, "B2")


def _pids(service: Service, name: str) -> set[str]:
    """Worker `name`'s processes (a judging names its worker host:pid#nonce of the pool child)."""
    main = psutil.Process(service.procs[name].pid)
    return {str(p.pid) for p in [main, *main.children(recursive=True)]}


STAMPED_RUN = """\
import os, sys, time
print("build", open("stamp").read().strip(), file=sys.stderr)
time.sleep(1.5)
plan = os.path.join(os.environ["MEMORACE_OUT_DIR"], "plan.csv")
open(plan, "w").write("id,offset\\na,0\\nb,8\\n")
"""


def stamped_archive(tmp: Path) -> Path:
    """An archive whose build writes a random stamp and whose planner prints it: the same
    stamp in every case's log means one build, whichever host judged the case."""
    folder = tmp / "stamped"
    folder.mkdir()
    (folder / "memorace.toml").write_text(
        'build = "sh -c \'od -An -N8 -tx8 /dev/urandom > stamp\'"\nrun = "python3 run.py"\n'
    )
    (folder / "run.py").write_text(STAMPED_RUN)
    return Path(shutil.make_archive(str(tmp / "stamped"), "gztar", folder))


def test_a_judgings_cases_spread_over_hosts_with_one_build(tmp_path, scratch_root):
    """Hosts with their own build caches: the helper host restores the owner's build
    from the blob store (judgings.build_blob) and never builds."""
    from tests.test_case_split import NAMES, case_runs, six_cases

    with postgres_database() as db_url, redis_server() as redis:
        service = start_service(
            tmp_path, [six_cases(tmp_path / "pkg")], database_url=db_url, broker_url=redis.url
        )
        try:
            hosts = {
                h: host_env(tmp_path, scratch_root, h)
                | {"MEMORACE_BUILD_CACHE_DIR": str(tmp_path / f"builds-{h}")}
                for h in "AB"
            }
            service.start_worker("A", beat=True, env=hosts["A"])
            token = service.add_team("red", "alice")
            sub = service.submit(token, "tiny", stamped_archive(tmp_path))

            def running() -> bool:
                body = service.api("GET", f"/api/v1/submissions/{sub['id']}", token).json()
                return body["status"] == "running"

            wait_for(running, 60, "the judging to start")
            service.start_worker("B", beat=False, env=hosts["B"])
            done = service.wait_done(token, sub["id"], timeout=180)
            assert done["status"] == "done", done["status_detail"]
            runs = case_runs(db_url, done["judging_id"])
            by_host = {
                h: [r for r in runs if str(worker_pid(r[2])) in _pids(service, h)] for h in "AB"
            }
            assert by_host["A"] and by_host["B"], runs  # both hosts judged cases
            logs = _query(
                db_url, "SELECT r.case, r.log FROM case_results r WHERE r.judging_id = :j",
                j=done["judging_id"],
            )  # fmt: skip
            stamps = {line for _, log in logs for line in log.splitlines() if "build " in line}
            assert len(logs) == len(NAMES) and len(stamps) == 1, logs  # one build for all
            (blob,) = _query(
                db_url, "SELECT build_blob FROM judgings WHERE id = :j", j=done["judging_id"]
            )[0]
            assert blob, "the build was not shared through the blob store"
        finally:
            service.stop()
