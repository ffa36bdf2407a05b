"""Every case starts from the state right after the build, in both sandboxes.

A hostile planner hides files everywhere it can write (working folder, HOME, TMPDIR,
/tmp, its own folder, the output folder, shared memory, a SysV segment, a POSIX
queue, a process left behind) in the first case and looks for them in the next; one
that wrecks its built program in the first case finds it intact in the next.
"""

from __future__ import annotations

import textwrap
import zipfile
from pathlib import Path

import pytest

from judge.package import load_problem
from judge.pipeline import judge_planner
from judge.sandbox.local import bwrap_works
from judge.verdict import Verdict
from tests.test_package import make_package
from tests.test_sandbox import GOOD_PLAN, SANDBOXES

# Case "one" runs first (public), then "two" (hidden): state must not flow between them.
PRELUDE = """
import ctypes, json, os, sys, time
CASE = json.load(open(os.path.join(os.environ["MEMORACE_CASE_DIR"], "case.json")))["name"]
HERE = os.path.dirname(os.path.abspath(sys.argv[0]))
PLACES = sorted({os.getcwd(), HERE, os.environ.get("HOME", "/"), os.environ.get("TMPDIR", "/"),
                 "/tmp", "/dev/shm", os.environ["MEMORACE_OUT_DIR"], "/submission"})
LIBC = ctypes.CDLL(None, use_errno=True)
SHM_KEY, QUEUE = 0x4D454D4F, b"/memorace-leak"
"""

LEAKER = (
    PRELUDE
    + """
if CASE == "one":
    for place in PLACES:
        for name in ("leak.txt", ".leak", "deep/er/leak.txt"):
            path = os.path.join(place, name)
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                open(path, "w").write("hidden case data")
            except OSError:
                pass
        try:
            os.chmod(os.path.join(place, "deep"), 0)  # a folder its owner cannot list
        except OSError:
            pass
    LIBC.shmget(SHM_KEY, 4096, 0o1600)  # IPC_CREAT | 0600
    LIBC.mq_open(QUEUE, 0o102, 0o600, None)  # O_CREAT | O_RDWR
    if os.fork() == 0:  # a straggler that writes once the case is over
        os.setsid()
        time.sleep(1.5)
        for place in PLACES:
            try:
                open(os.path.join(place, "late.txt"), "w").write("x")
            except OSError:
                pass
        os._exit(0)
else:
    time.sleep(2)  # the straggler's moment, had it survived
    found = [os.path.join(place, name) for place in PLACES
             for name in ("leak.txt", ".leak", "deep", "late.txt")
             if os.path.lexists(os.path.join(place, name))]
    if LIBC.shmget(SHM_KEY, 0, 0) != -1:
        found.append("SysV shared memory segment")
    if LIBC.mq_open(QUEUE, 0, 0, None) != -1:
        found.append("POSIX message queue")
    if found:
        print("LEAKED", found)
        sys.exit(42)
"""
    + GOOD_PLAN
    + "\n"
)

# The build makes prog.py, data/ and awkward things (links, a fifo, an unreadable file
# and folder); case one wrecks it all; case two needs it exactly as built.
BUILD = """
import os
os.makedirs("data", exist_ok=True)
open("data/table.txt", "w").write("built")
open("prog.py", "w").write(open("prog.src").read())
os.symlink("/etc/passwd", "to_etc")
os.symlink("/nowhere", "dangling")
os.mkfifo("fifo")
open("secret", "w").write("s")
os.chmod("secret", 0)
os.makedirs("closed/in")
os.chmod("closed", 0)
"""

WRECKER = (
    PRELUDE
    + """
import hashlib, shutil, stat
ok = open("data/table.txt").read() == "built" and os.path.getsize(sys.argv[0]) > 100
seen = []
for root, dirs, files in os.walk(".", followlinks=False):
    seen += [(os.path.join(root, n), os.lstat(os.path.join(root, n)).st_mode) for n in dirs + files]
print("STATE", hashlib.sha256(repr(sorted(seen)).encode()).hexdigest())
if CASE == "one":
    open("data/table.txt", "w").write("wrecked")
    os.link("data/table.txt", "hardlink.txt")
    shutil.rmtree("data", ignore_errors=True)
    os.symlink("/tmp", "data")
    os.unlink("to_etc")
    os.symlink("/", "to_etc")
    me = os.path.abspath(sys.argv[0])
    os.unlink(me)
    open(me, "w").write("import sys; sys.exit(9)\\n")
    for name in ["mess"] + ["m"] * 1100:  # deeper than Python's recursion limit
        os.mkdir(name)
        os.chdir(name)
    os.chdir(os.path.dirname(me))
    os.chmod("mess", 0)
    os.chmod(".", 0o500)
elif not ok or os.path.exists("hardlink.txt"):
    print("the build output changed"); sys.exit(42)
"""
    + GOOD_PLAN
    + "\n"
)


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    return load_problem(make_package(tmp_path_factory.mktemp("pkg")))


def _needs_bwrap(sandbox: str) -> None:
    if sandbox == "local" and not bwrap_works():
        pytest.fail("the local sandbox needs bubblewrap to keep cases apart")


def _judge(problem, source: Path, sandbox: str) -> list:
    report = judge_planner(problem, source, split="all", time_limit_s=20, sandbox=sandbox)
    assert [r.case for r in report.results] == ["one", "two"]
    return report.results


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_nothing_written_in_one_case_reaches_the_next(problem, tmp_path, sandbox):
    _needs_bwrap(sandbox)
    source = tmp_path / "planner.py"
    source.write_text(textwrap.dedent(LEAKER))
    first, second = _judge(problem, source, sandbox)
    assert first.verdict == Verdict.OK, (first.message, first.log)
    assert second.verdict == Verdict.OK, (second.message, second.log)


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_case_cannot_change_the_build_output(problem, tmp_path, sandbox):
    _needs_bwrap(sandbox)
    source = tmp_path / "sub.zip"
    with zipfile.ZipFile(source, "w") as zf:
        zf.writestr("memorace.toml", 'build = "python3 build.py"\nrun = "python3 prog.py"\n')
        zf.writestr("build.py", BUILD)
        zf.writestr("prog.src", textwrap.dedent(WRECKER))
    first, second = _judge(problem, source, sandbox)
    assert first.verdict == Verdict.OK, (first.message, first.log)
    assert second.verdict == Verdict.OK, (second.message, second.log)
    assert "STATE" in first.log and first.log == second.log  # the same files, kinds, modes
