"""The local sandbox against an attacker's review: deep trees, other users of the host,
disk filling, and concurrent judgings sharing a sandbox uid."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from judge.package import Limits
from judge.sandbox.base import RunOutcome
from judge.sandbox.local import LocalSandbox, LocalSession
from judge.sandbox.local_fs import DISK_LIMIT_BYTES, usage
from judge.verdict import Verdict
from tests.conftest import ROOT
from tests.test_sandbox import GOOD_PLAN, SANDBOXES, assert_healthy, judge_source

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="sandbox users need root")
NOBODY = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    from judge.package import load_problem
    from tests.test_package import make_package

    return load_problem(make_package(tmp_path_factory.mktemp("pkg")))


@contextmanager
def local_session(tmp_path: Path, body: str) -> Iterator[LocalSession]:
    root = tmp_path / "sub"
    root.mkdir()
    (root / "planner.py").write_text("import os, sys, time\n" + textwrap.dedent(body))
    with LocalSandbox().session(root, None, ["python3", "planner.py"], Limits()) as session:
        yield session


NEST = """
os.chdir({folder})
for _ in range({depth}):  # deeper than Python's recursion limit
    os.mkdir("d")
    os.chdir("d")
"""


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_deep_tree_in_out_is_the_planners_verdict(problem, tmp_path, sandbox):
    body = GOOD_PLAN + NEST.format(folder="os.environ['MEMORACE_OUT_DIR']", depth=1200)
    result = judge_source(problem, tmp_path, body, sandbox, limit=20)
    allowed = {Verdict.OUTPUT_LIMIT} if sandbox == "local" else {Verdict.OK}  # docker: top only
    assert result.verdict in allowed, (result.message, result.log)
    assert_healthy(problem, tmp_path, sandbox)


def test_a_path_past_path_max_in_work_is_too_much_output(problem, tmp_path):
    body = GOOD_PLAN + NEST.format(folder="os.getcwd()", depth=2500)  # cwd: /work
    result = judge_source(problem, tmp_path, body, "local", limit=20)
    assert result.verdict == Verdict.OUTPUT_LIMIT, (result.message, result.log)
    assert_healthy(problem, tmp_path, "local")


SNOOPED = """
case = open(os.path.join(os.environ['MEMORACE_CASE_DIR'], 'buffers.csv')).read()
out = os.environ['MEMORACE_OUT_DIR']
open(os.path.join(out, 'started'), 'w').write('1')
time.sleep(4)
open(os.path.join(out, 'plan.csv'), 'w').write(case)
"""


@ROOT_ONLY
def test_other_users_cannot_read_the_case_the_source_or_the_output(tmp_path):
    with local_session(tmp_path, SNOOPED) as session:
        (session.case_dir / "buffers.csv").write_text("secret,case\n")
        done: list[RunOutcome] = []
        runner = threading.Thread(target=lambda: done.append(session.run_case(30)))
        runner.start()
        for _ in range(200):
            if (session.out_dir / "started").exists():
                break
            time.sleep(0.05)
        snooped = {
            path: subprocess.run([*NOBODY, "cat", str(path)], capture_output=True)
            for path in (
                session.case_dir / "buffers.csv",
                session.work / "planner.py",
                session.out_dir / "started",
                session.scratch / "log",
            )
        }
        listing = subprocess.run([*NOBODY, "ls", str(session.scratch)], capture_output=True)
        runner.join()
        assert [p for p, proc in snooped.items() if proc.returncode == 0] == []
        assert listing.returncode != 0
        assert done[0].exit_code == 0, done[0].log  # the planner itself still reads the case
        assert (session.out_dir / "plan.csv").read_text() == "secret,case\n"


FILL = """
folder = {folder}
chunk = b"x" * 2**20
for i in range(64):  # 1 GiB in files of 16 MiB (each under the file size limit)
    with open(os.path.join(folder, f"f{{i}}"), "wb") as f:
        for _ in range(16): f.write(chunk)
open(os.path.join(os.environ['MEMORACE_OUT_DIR'], 'plan.csv'), 'w').write('done')
"""


@ROOT_ONLY
@pytest.mark.parametrize(
    "folder", ["os.environ['TMPDIR']", "os.environ['MEMORACE_OUT_DIR']", "os.getcwd()"]
)
def test_a_gigabyte_written_anywhere_is_stopped_early(tmp_path, folder):
    with local_session(tmp_path, FILL.format(folder=folder)) as session:
        start = time.monotonic()
        outcome = session.run_case(60)
        elapsed = time.monotonic() - start
        held = usage([session.scratch]).bytes
    assert outcome.output_exceeded or outcome.exit_code not in (0, None), outcome
    assert not (session.out_dir / "plan.csv").exists()
    assert held < 4 * DISK_LIMIT_BYTES, f"{held / 2**20:.0f} MiB held on the host"
    assert elapsed < 30, elapsed
    print(f"held {held / 2**20:.0f} MiB after {elapsed:.2f} s")


LEASER = """
import json, sys
from contextlib import ExitStack
from pathlib import Path
from judge.package import Limits
import judge.sandbox.local_uids as uids
from judge.sandbox.local import LocalSandbox
uids.SANDBOX_UID_COUNT = int(sys.argv[2])  # a small range: clashes when leases are not exclusive
with ExitStack() as stack:
    session = lambda: LocalSandbox().session(Path(sys.argv[1]), None, ["true"], Limits())
    got = [stack.enter_context(session()).uid for _ in range(int(sys.argv[3]))]
    print(json.dumps(got), flush=True)
    sys.stdin.read()  # hold them until every process has its own
"""


@ROOT_ONLY
def test_concurrent_sessions_in_several_processes_get_distinct_uids(tmp_path):
    root, locks = tmp_path / "sub", tmp_path / "locks"
    root.mkdir()
    (root / "planner.py").write_text("")
    env = os.environ | {"MEMORACE_SANDBOX_UID_LOCKS": str(locks)}
    env |= {"MEMORACE_SANDBOX_UID_BASE": "1390000", "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", LEASER, str(root), "48", "12"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            cwd=ROOT,
        )
        for _ in range(4)
    ]
    got = [json.loads(p.stdout.readline() or "[]") for p in procs]
    for p in procs:
        p.communicate(b"", timeout=60)
    every = [uid for uids in got for uid in uids]
    assert len(every) == 48, got
    assert len(set(every)) == 48, sorted(every)
