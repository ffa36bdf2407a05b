"""A deployment that cannot judge correctly says so instead of blaming contestants.

- A worker whose scratch folder (TMPDIR) the Docker engine cannot see at the same
  path refuses to start. Reproduced honestly: the worker runs in a private mount
  namespace with a tmpfs over its TMPDIR, so the engine (on this host) finds the
  empty folder below, as it finds an empty or missing folder when a worker container
  lacks the same-path mount (issue 14).
- A judge-side failure to set up a case is a JUDGE_ERROR, never a BUILD_ERROR, and a
  judging that ended in a judge fault is never reused for the same bytes.
- The built wheel holds the files the service reads at run time.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import zipfile
from pathlib import Path

import pytest

from api.settings import Settings
from tests.conftest import IN_CI, ROOT
from tests.guides import ensure_built
from tests.service import VENV_BIN, start_service, wait_for
from tests.test_api import client, contestant, submit  # noqa: F401 (client is a fixture)
from tests.test_package import make_package
from tests.test_sandbox import docker_ready

CELERY_WORKER = [str(VENV_BIN / "celery"), "-A", "worker.celery_app", "worker", "-c", "1",
                 "--loglevel", "INFO"]  # fmt: skip


def _unshare_works() -> bool:
    probe = ["unshare", "-m", "--propagation", "private", "true"]
    try:
        return subprocess.run(probe, capture_output=True, check=False).returncode == 0
    except OSError:
        return False


NO_DOCKER = docker_ready()
NO_PRIVATE_MOUNTS = NO_DOCKER or ("" if _unshare_works() else "no private mount namespace")
needs_docker = pytest.mark.skipif(bool(NO_DOCKER) and not IN_CI, reason=NO_DOCKER)
needs_private_mounts = pytest.mark.skipif(
    bool(NO_PRIVATE_MOUNTS) and not IN_CI, reason=NO_PRIVATE_MOUNTS
)


def in_private_tmpfs(folder: Path, argv: list[str]) -> list[str]:
    """`argv` in a mount namespace of its own where `folder` is a fresh tmpfs: what it
    writes there, the Docker engine (outside) never sees."""
    script = 'mount -t tmpfs -o mode=0755 memorace-private "$1" && shift && exec "$@"'
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh",
            str(folder), *argv]  # fmt: skip


def worker_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORACE_")}
    env |= {"MEMORACE_DATA_DIR": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1"}
    return env | extra


@needs_private_mounts
def test_worker_refuses_to_start_when_the_engine_cannot_see_its_scratch_folder(tmp_path):
    private = tmp_path / "private"
    private.mkdir()
    env = worker_env(tmp_path, TMPDIR=str(private / "scratch"), MEMORACE_SANDBOX="docker")
    proc = subprocess.Popen(
        in_private_tmpfs(private, CELERY_WORKER), cwd=ROOT, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:  # it judges (wrongly) instead of refusing
        os.killpg(proc.pid, 9)
        out = proc.communicate()[0]
        pytest.fail(f"the worker did not refuse to start:\n{out[-3000:]}")
    assert proc.returncode != 0, out[-3000:]
    assert "worker refuses to start" in out and "does not see the scratch folder" in out, out
    assert "same path" in out and " ready." not in out


@needs_docker
def test_worker_makes_its_missing_scratch_folder_and_starts(tmp_path):
    """TMPDIR missing at start (the compose file's /var/lib/memorace/scratch on a clean
    host): made owner-only, chosen by tempfile, and the probe passes."""
    scratch = tmp_path / "data" / "scratch"
    env = worker_env(tmp_path, TMPDIR=str(scratch), MEMORACE_SANDBOX="docker")
    log = tmp_path / "worker.log"
    with log.open("wb") as fh:
        proc = subprocess.Popen(CELERY_WORKER, cwd=ROOT, env=env, stdout=fh, stderr=fh,
                                start_new_session=True)  # fmt: skip
    try:
        wait_for(lambda: b" ready." in log.read_bytes() or proc.poll() is not None, 90, "ready")
        assert proc.poll() is None, log.read_text()[-3000:]
        assert scratch.stat().st_mode & 0o777 == 0o711
        # The pool process's own folder lies in TMPDIR, not in the system /tmp.
        wait_for(lambda: list(scratch.glob("memorace-worker-*")), 30, "the pool's folder")
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(60)


def test_ensure_dirs_makes_tmpdir_and_undoes_a_cached_fallback(tmp_path, monkeypatch):
    scratch = tmp_path / "data" / "scratch"
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", None)
    assert tempfile.gettempdir() != str(scratch)  # missing: Python fell back (and cached it)
    Settings(data_dir=tmp_path / "data").ensure_dirs()
    assert tempfile.gettempdir() == str(scratch)
    assert scratch.stat().st_mode & 0o777 == 0o711
    for name in ("artifacts", "plans", "problems", "queue", "imports", "blobs", "cache"):
        assert (tmp_path / "data" / name).stat().st_mode & 0o777 == 0o700


JUDGE_IN_DOCKER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from judge.package import load_problem
    from judge.pipeline import judge_planner
    from judge.sandbox import SandboxError
    try:
        report = judge_planner(load_problem(Path(sys.argv[1])), Path(sys.argv[2]),
                               split="public", sandbox="docker")
        print("VERDICTS", sorted({str(r.verdict) for r in report.results}))
    except SandboxError as exc:
        print("SANDBOX ERROR", exc)
    """
)


@needs_private_mounts
def test_submission_files_missing_in_the_container_is_our_fault(tmp_path):
    """The issue's failure, judged without the start-up check: the container sees empty
    bind mounts. It is a SandboxError (JUDGE_ERROR in the worker), not the contestant's
    BUILD_ERROR 'planner.cpp: No such file or directory'."""
    private = tmp_path / "private"
    private.mkdir()
    planner = tmp_path / "planner.cpp"
    planner.write_text("int main() { return 0; }\n")
    argv = [sys.executable, "-c", JUDGE_IN_DOCKER, str(make_package(tmp_path)), str(planner)]
    env = worker_env(tmp_path, TMPDIR=str(private))
    proc = subprocess.run(in_private_tmpfs(private, argv), cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "SANDBOX ERROR the sandbox does not see the judge's files" in proc.stdout, proc.stdout
    assert "0 of 1 submission files, case folder empty" in proc.stdout


def test_missing_artifact_is_a_judge_error_and_resubmitting_judges_again(tmp_path):
    """A worker that cannot find the stored upload (a host without the shared data
    folder) fails the judging as ours, retried, never as a BUILD_ERROR; the same bytes
    sent again are judged anew, not answered with the failure."""
    service = start_service(tmp_path, [make_package(tmp_path / "pkg")])
    try:
        token = service.add_team("red", "alice")
        planner = ROOT / "reference_solutions" / "naive.py"
        first = service.submit(token, "tiny", planner)
        sha = hashlib.sha256(planner.read_bytes()).hexdigest()
        (service.data_dir / "blobs" / sha[:2] / sha).unlink()
        service.start_worker()
        failed = service.wait_done(token, first["id"], timeout=180)
        assert failed["status"] == "error", failed
        assert "our fault" in failed["status_detail"] and "BUILD_ERROR" not in str(failed)
        seen = service.api("GET", f"/api/v1/submissions/{first['id']}").json()  # organizer
        assert "must share MEMORACE_DATA_DIR" in seen["status_detail"], seen
        again = service.submit(token, "tiny", planner)
        assert not again["reused"] and again["id"] != first["id"]
        done = service.wait_done(token, again["id"], timeout=180)
        assert done["status"] == "done" and "BUILD_ERROR" not in done["status_detail"], done
    finally:
        service.stop()


def test_a_judging_with_a_judge_error_is_not_reused(client):  # noqa: F811
    from api.db.models import CaseResultRow, Judging, Submission, utcnow
    from api.db.session import session_scope
    from api.settings import get_settings

    alice = contestant(client)
    first = submit(client, alice).json()
    with session_scope(get_settings().database_url) as db:  # as a judging that ended so
        sub = db.get(Submission, first["id"])
        judging = db.query(Judging).filter_by(submission_id=sub.id).one()
        judging.status, judging.finished_at, judging.attempt = "final", utcnow(), 1
        for case, split, verdict in (("one", "public", "JUDGE_ERROR"), ("two", "hidden", "OK")):
            row = CaseResultRow(judging_id=judging.id, case=case, split=split, weight=1.0,
                                verdict=verdict, message="", lower_bound=16, score=0.0)  # fmt: skip
            db.add(row)
        sub.status, sub.current_judging_id = "done", judging.id
    again = submit(client, alice)
    assert again.status_code == 201 and not again.json()["reused"], again.text
    assert again.json()["id"] != first["id"]
    clean = submit(client, alice, name="renamed.py")  # the new one is fine to reuse
    assert clean.status_code == 200 and clean.json()["id"] == again.json()["id"]


def test_the_wheel_holds_what_the_service_reads_at_run_time(tmp_path):
    """Built from a copy of the tree and used from elsewhere: pages render, static files
    and the guides are served and the schema migrates from the installed package alone."""
    ensure_built()  # the guides (make guide), which the wheel carries
    source = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("api", "judge", "worker", "client"):
        shutil.copytree(ROOT / name, source / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    wheels = tmp_path / "wheels"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(source)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = wheels.glob("memorace-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in ("api/templates/base.html", "api/templates/admin/index.html",
                     "api/static/style.css", "api/db/migrations/env.py",
                     "api/db/migrations/script.py.mako",
                     "api/db/migrations/versions/0001_initial_schema.py",
                     "judge/sandbox/agent.py", "judge/types/offload/README.md",
                     "judge/types/online/README.md", "judge/starter/allocator.py",
                     "judge/starter/allocator.cpp", "api/guide/index.html",
                     "api/guide/operator/index.html", "api/guide/_static/basic.css"):  # fmt: skip
        assert expected in names, expected
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:  # what `pip install --no-deps` puts in place
        zf.extractall(site)
    check = textwrap.dedent(
        """
        import api
        from fastapi.testclient import TestClient
        from api.app import create_app
        from api.bootstrap import bootstrap
        from api.settings import get_settings
        assert api.__file__.startswith(SITE), api.__file__
        bootstrap(get_settings(), "admin", [])
        from judge.starterkit import kit_templates
        with TestClient(create_app()) as c:
            page, css = c.get("/login"), c.get("/static/style.css")
            rules = c.get("/types/online")
            guide = c.get("/guide/contestant/")
        assert page.status_code == 200 and "<form" in page.text, page.text[:500]
        assert rules.status_code == 200 and "Protocol" in rules.text, rules.text[:500]
        assert guide.status_code == 200 and "Contestant" in guide.text, guide.text[:500]
        kit = kit_templates("online")
        assert sorted(kit) == ["allocator.cpp", "allocator.py"], kit
        assert all(str(p).startswith(SITE) for p in kit.values()), kit
        assert css.status_code == 200 and css.text.strip(), css.status_code
        print("INSTALLED OK")
        """
    ).replace("SITE", repr(str(site)))
    env = worker_env(tmp_path, PYTHONPATH=str(site))
    run = subprocess.run([sys.executable, "-c", check], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert "INSTALLED OK" in run.stdout, run.stderr[-3000:]
