"""Hostile planners in both sandboxes: each gets its verdict and the judge stays healthy.

The docker tests need an engine and the runner image (`make images`); they skip
with a reason elsewhere and fail in CI (CI=true) when either is missing.
"""

from __future__ import annotations

import io
import os
import socket
import subprocess
import tarfile
import textwrap
import time
import zipfile
from pathlib import Path

import pytest

from judge.package import load_problem
from judge.pipeline import judge_planner
from judge.sandbox.base import process_started
from judge.sandbox.docker import IMAGE, engine_available
from judge.sandbox.local import bwrap_works, session_uids
from judge.verdict import Verdict
from tests.conftest import IN_CI, ROOT, judged_locally, shipped
from tests.test_package import make_package

GOOD_PLAN = (
    "open(os.path.join(os.environ['MEMORACE_OUT_DIR'], 'plan.csv'), 'w')"
    ".write('id,offset\\na,0\\nb,8\\n')"
)
HIDDEN = shipped("gpt2-train") / "data" / "hidden" / "h01.csv"  # the tests' hidden cases


def docker_ready() -> str:
    """Why docker tests cannot run here ('' when they can)."""
    if not engine_available():
        return "no Docker engine answers"
    proc = subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True, check=False)
    return "" if proc.returncode == 0 else f"image {IMAGE} is missing (make images)"


def sandbox_param(name: str):
    if name == "local":
        return pytest.param("local", id="local")
    why = docker_ready()
    marks = []
    if why and not IN_CI:
        marks.append(pytest.mark.skip(reason=why))
    return pytest.param("docker", id="docker", marks=marks)


SANDBOXES = [sandbox_param("local"), sandbox_param("docker")]


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    return load_problem(make_package(tmp_path_factory.mktemp("pkg")))


def judge_source(problem, tmp_path: Path, body: str, sandbox: str, limit: float = 2.0):
    source = tmp_path / "planner.py"
    source.write_text("import os, sys, time\n" + textwrap.dedent(body))
    report = judge_planner(problem, source, split="public", time_limit_s=limit, sandbox=sandbox)
    return report.results[0]


def assert_healthy(problem, tmp_path: Path, sandbox: str) -> None:
    """The next judging works and nothing of the sandbox user is left running."""
    result = judge_source(problem, tmp_path, GOOD_PLAN, sandbox)
    assert result.verdict == Verdict.OK, result.message
    if sandbox == "local" and os.geteuid() == 0:
        ours = session_uids()  # only this test process's sessions: a judge elsewhere is not ours
        for _ in range(30):  # killed processes may take a moment to be reaped
            left = [p for p in os.listdir("/proc") if p.isdigit() and _sandboxed(p, ours)]
            if not left:
                break
            time.sleep(0.1)
        assert not left, f"sandbox processes left: {left}"


def _sandboxed(pid: str, uids: set[int]) -> bool:
    try:
        uid = os.stat(f"/proc/{pid}").st_uid
    except FileNotFoundError:
        return False
    return uid in uids


HOSTILE = {
    "infinite_loop": ("while True: pass", {Verdict.TIME_LIMIT}),
    "sleep_forever": ("time.sleep(10**6)", {Verdict.TIME_LIMIT}),
    "memory_bomb": ("x = []\nwhile True: x.append(bytearray(64 * 2**20))", {Verdict.MEMORY_LIMIT}),
    "fork_bomb": (
        """
        while True:
            try: os.fork()
            except OSError: pass
    """,
        {Verdict.TIME_LIMIT, Verdict.RUNTIME_ERROR},
    ),
    "gigabyte_of_stdout": (
        """
        chunk = 'x' * 2**20
        for _ in range(1024): sys.stdout.write(chunk)
    """,
        {Verdict.OUTPUT_LIMIT},
    ),
    "ten_gb_plan": (
        """
        with open(os.path.join(os.environ['MEMORACE_OUT_DIR'], 'plan.csv'), 'w') as f:
            chunk = '0' * 2**20
            for _ in range(10 * 1024): f.write(chunk)
    """,
        {Verdict.OUTPUT_LIMIT},
    ),
    "exits_non_zero": ("sys.exit(3)", {Verdict.RUNTIME_ERROR}),
    "dies_by_signal": (
        "import signal; os.kill(os.getpid(), signal.SIGSEGV)",
        {Verdict.RUNTIME_ERROR},
    ),
    "kills_its_parent": (
        "import signal\nos.kill(os.getppid(), signal.SIGKILL)\ntime.sleep(1)\n" + GOOD_PLAN,
        set(Verdict),
    ),
    "garbage_plan": (
        "open(os.environ['MEMORACE_OUT_DIR'] + '/plan.csv', 'wb').write(os.urandom(4096))",
        {Verdict.BAD_OUTPUT},
    ),
    "plan_is_a_link_to_hidden_data": (
        f"os.symlink({str(HIDDEN)!r}, os.environ['MEMORACE_OUT_DIR'] + '/plan.csv')",
        {Verdict.BAD_OUTPUT},
    ),
}


# A planner expected to end some other way than TIME_LIMIT gets ample time, so that a
# loaded machine (a memory bomb took 2 s to reach its limit once in CI) cannot turn its
# verdict into TIME_LIMIT; a planner expected to run out of time keeps a short limit.
AMPLE_LIMIT_S = 30.0


@pytest.mark.parametrize("sandbox", SANDBOXES)
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_planner(problem, tmp_path, sandbox, name):
    body, verdicts = HOSTILE[name]
    limit = 2.0 if Verdict.TIME_LIMIT in verdicts else AMPLE_LIMIT_S
    result = judge_source(problem, tmp_path, body, sandbox, limit)
    assert result.verdict in verdicts, (result.verdict, result.message, result.log[-300:])
    assert result.score == 0.0 or result.verdict == Verdict.OK
    assert_healthy(problem, tmp_path, sandbox)


# Each probe must FAIL for the planner; it writes a valid plan only when all of them failed.
ESCAPES = f"""
    import socket
    escaped = []
    for path in ["/etc/passwd-memorace", "/usr/memorace", "/case/x", "/submission/x",
                 {str(ROOT / "escaped")!r}]:
        try:
            open(path, "w").write("x"); escaped.append("wrote " + path)
        except OSError: pass
    for path in [{str(HIDDEN)!r}, {str(ROOT / "pyproject.toml")!r}, "/etc/shadow"]:
        try:
            open(path).read(1); escaped.append("read " + path)
        except OSError: pass
    for host, port in [("127.0.0.1", 6379), ("127.0.0.1", 5432), ("8.8.8.8", 53)]:
        try:
            socket.create_connection((host, port), timeout=1).close()
            escaped.append(f"net {{host}}")
        except OSError: pass
    if escaped:
        print(escaped); sys.exit(42)
    {GOOD_PLAN}
"""


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_no_writes_outside_out_no_reads_of_judge_files_no_network(problem, tmp_path, sandbox):
    if sandbox == "local" and not bwrap_works():
        pytest.fail("the local sandbox needs bubblewrap for file and network isolation")
    result = judge_source(problem, tmp_path, ESCAPES, sandbox, limit=10)
    assert result.verdict == Verdict.OK, result.log
    assert not (ROOT / "escaped").exists()


CPP_PLANNER = r"""#include <cstdio>
#include <cstdlib>
#include <string>
int main() {
    std::string out = std::getenv("MEMORACE_OUT_DIR");
    FILE* f = std::fopen((out + "/plan.csv").c_str(), "w");
    std::fputs("id,offset\na,0\nb,8\n", f);
    return std::fclose(f);
}
"""


def _zip(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_archive_submission_builds_and_runs(problem, tmp_path, sandbox):
    planner = CPP_PLANNER
    toml = b'build = "g++ -O2 -std=c++20 -o p main.cpp"\nrun = "./p"\n'
    source = _zip(tmp_path / "sub.zip", {"memorace.toml": toml, "main.cpp": planner.encode()})
    report = judge_planner(problem, source, sandbox=sandbox)
    assert [r.verdict for r in report.results] == [Verdict.OK, Verdict.OK]


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_compile_error_is_a_build_error(problem, tmp_path, sandbox):
    source = tmp_path / "bad.cpp"
    source.write_text("int main() { return undefined_name; }\n")
    report = judge_planner(problem, source, sandbox=sandbox)
    assert {r.verdict for r in report.results} == {Verdict.BUILD_ERROR}
    assert "undefined_name" in report.build_error


def test_zip_bomb_and_escaping_archives_are_build_errors(problem, tmp_path):
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("memorace.toml", b'run = "true"\n')
        with zf.open("zeros.bin", "w", force_zip64=True) as fh:
            for _ in range(200):
                fh.write(bytes(2**20))
    evil = _zip(tmp_path / "evil.zip", {"memorace.toml": b'run = "true"\n', "../x": b"x"})
    link = tmp_path / "link.tar.gz"
    with tarfile.open(link, "w:gz") as tf:
        data = b'run = "true"\n'
        info = tarfile.TarInfo("memorace.toml")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
        sym = tarfile.TarInfo("etc")
        sym.type, sym.linkname = tarfile.SYMTYPE, "/etc"
        tf.addfile(sym)
    for source, words in [(bomb, "64 MiB"), (evil, ".."), (link, "link")]:
        report = judge_planner(problem, source, sandbox="local")
        assert {r.verdict for r in report.results} == {Verdict.BUILD_ERROR}
        assert words in report.build_error, report.build_error


def test_container_spec_locks_the_planner_down(tmp_path):
    from judge.package import Limits
    from judge.sandbox.docker import container_spec

    spec = container_spec(tmp_path / "case", tmp_path / "sub", Limits(5.0, 1024, 2, 1), gpu_slot=3)
    request = spec.pop("device_requests")
    assert [(r["DeviceIDs"], r["Capabilities"]) for r in request] == [(["3"], [["gpu"]])]
    assert spec == {
        "image": IMAGE,
        "command": ["sleep", "infinity"],
        "user": "0",
        "init": True,
        "network_mode": "none",
        "read_only": True,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "mem_limit": "1024m",
        "memswap_limit": "1024m",
        "pids_limit": 256,
        "nano_cpus": 2_000_000_000,
        "tmpfs": {
            "/tmp": "rw,exec,nosuid,nodev,size=67108864,mode=1777",
            "/out": "rw,noexec,nosuid,nodev,size=67108864,mode=1777",
            "/work": "rw,exec,nosuid,nodev,size=512m,uid=10001,gid=10001,mode=0755",
            "/built": "rw,noexec,nosuid,nodev,size=512m,mode=0755",  # root's: cases restore it
        },
        "volumes": {
            str(tmp_path / "case"): {"bind": "/case", "mode": "ro"},
            str(tmp_path / "sub"): {"bind": "/submission", "mode": "ro"},
        },
        "environment": {"MEMORACE_CASE_DIR": "/case", "MEMORACE_OUT_DIR": "/out"},
        "labels": {
            "memorace.sandbox": "1",
            "memorace.owner": f"{socket.gethostname()}:{os.getpid()}",
            "memorace.owner_started": process_started(os.getpid()),
        },
        "detach": True,
    }
    assert "device_requests" not in container_spec(tmp_path, tmp_path, Limits(), None)


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", [p for p in SANDBOXES if p.id == "docker"])
def test_reference_planners_through_docker_match_the_local_judge(sandbox):
    """Deterministic planners give identical verdicts, peaks and scores in both sandboxes
    (the plan is verified outside either); the anytime strong planner is valid in docker."""
    problem = load_problem(shipped("gpt2-train"))
    for name in ("naive.py", "greedy_size.cpp", "best_fit.cpp"):
        source = ROOT / "reference_solutions" / name
        docker = judge_planner(problem, source, split="public", sandbox=sandbox)
        # The local judge's, of every case (tests/test_reference_planners.py judged them).
        local = [r for r in judged_locally("gpt2-train", name).results if r.split == "public"]
        seen = [(r.case, r.verdict, r.peak, r.score, r.plan_digest) for r in docker.results]
        assert seen == [(r.case, r.verdict, r.peak, r.score, r.plan_digest) for r in local]
        assert {r.verdict for r in docker.results} == {Verdict.OK}
    strong = judge_planner(
        problem,
        ROOT / "reference_solutions" / "strong_search.tar.gz",
        split="public",
        time_limit_s=3,
        sandbox=sandbox,
    )
    assert {r.verdict for r in strong.results} == {Verdict.OK}


DOCKER = [p for p in SANDBOXES if p.id == "docker"]
# The first case attacks the in-container supervisor (its parent); later cases behave.
ATTACK_SUPERVISOR = (
    """
    import json, signal
    case = json.load(open(os.path.join(os.environ['MEMORACE_CASE_DIR'], 'case.json')))
    if case['name'] == 'one':
        parent = os.getppid()
        for probe in [f'/proc/{parent}/mem', f'/proc/{parent}/fd/0', f'/proc/{parent}/environ']:
            try:
                open(probe, 'rb').read(1); print('read', probe); sys.exit(42)
            except OSError: pass
        os.kill(parent, signal.%s)
        time.sleep(30)
    """
    + GOOD_PLAN
)


@pytest.mark.parametrize("sandbox", DOCKER)
@pytest.mark.parametrize("attack", ["SIGKILL", "SIGSTOP"])
def test_planner_cannot_break_the_docker_supervisor(problem, tmp_path, sandbox, attack):
    """Killing or stopping the supervisor fails that case only (bounded time); its
    memory and pipes are out of the planner's reach; the next cases are judged."""
    source = tmp_path / "planner.py"
    source.write_text("import os, sys, time\n" + textwrap.dedent(ATTACK_SUPERVISOR % attack))
    start = time.monotonic()
    report = judge_planner(problem, source, split="all", time_limit_s=2.0, sandbox=sandbox)
    first, *rest = report.results
    assert first.verdict in {Verdict.RUNTIME_ERROR, Verdict.TIME_LIMIT}, first.message
    assert "supervisor" in first.log
    assert rest and all(r.verdict == Verdict.OK for r in rest), [r.message for r in rest]
    assert time.monotonic() - start < 30
