"""Attacks on the `online` judging that the judge withstands (a security review's
leftovers): the allocator never sees past the request it answers (its stdin pipe holds
nothing more, no case file is visible), pre-written or odd answers are faults, killing
or signalling the docker supervisor ends the case (never the judging), an orphan in a
session of its own is gone before the next case, and a rescore's re-verification of
the kept transcripts gives the judged verdicts, scores and peaks."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from judge.package import load_cases, load_problem
from judge.pipeline import judge_planner
from judge.verdict import Verdict
from judge.verifier import check_plan
from tests.online_cases import (
    FIRST_FIT_PY,
    hostile_allocator,
    make_package,
    random_trace,
    trace_text,
)
from tests.test_sandbox import SANDBOXES, sandbox_param

LIMIT_S = 2.0

# Case "a-hostile" gets the attack, case "b-clean" answers garbage if any process of
# the first case is still there.
HOOKS = """\
def hostile(n):
    parent = os.getppid()  # docker: the supervisor (the shell execs the allocator)
    if KIND == "kill_agent" and n == 3:
        os.kill(parent, signal.SIGKILL); time.sleep(600)
    if KIND == "stop_agent" and n == 3:
        os.kill(parent, signal.SIGSTOP); time.sleep(600)
    if KIND == "interrupt_agent" and n == 3:
        os.kill(parent, signal.SIGINT); time.sleep(600)
    if KIND == "setsid_orphan" and n == 0 and os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execvp("sh", ["sh", "-c", "sleep 60 # MARK"])
        os._exit(0)
    if KIND == "fifo_log" and n == 3:  # the supervisor's log replaced by a FIFO
        for entry in ["/tmp/.memorace.log"] + ["/tmp/" + e for e in os.listdir("/tmp")]:
            try:
                os.unlink(entry)
            except OSError:
                pass
            os.mkfifo(entry)
    if KIND == "taint_agent" and n == 3:  # settings every later planner would inherit
        try:
            os.setpriority(os.PRIO_PROCESS, parent, 13)
            resource.prlimit(parent, resource.RLIMIT_NOFILE, (4242, 4242))
        except OSError:
            pass
    if KIND == "close_and_deaf" and n == 3:  # no more answers, no more reading
        os.close(1); time.sleep(600)
    if KIND == "answers_ahead" and n == 0:
        sys.stdout.write("0\\n" * 5000); sys.stdout.flush()
"""
HOOK = '    if w[0] == "a" and KIND != "clean":\n        hostile(int(w[1][1:]))\n'
HOSTILE = hostile_allocator(HOOKS, HOOK)

# kind -> (sandboxes, verdicts allowed)
DOCKER = [sandbox_param("docker")]
KINDS = {
    "kill_agent": (DOCKER, {Verdict.RUNTIME_ERROR, Verdict.TIME_LIMIT}),
    "stop_agent": (DOCKER, {Verdict.TIME_LIMIT}),
    "interrupt_agent": (DOCKER, {Verdict.RUNTIME_ERROR, Verdict.TIME_LIMIT}),
    "setsid_orphan": (SANDBOXES, {Verdict.OK}),
    "answers_ahead": (SANDBOXES, {Verdict.BAD_OUTPUT}),
    # found by the review, failed before the fix: the FIFO made the judging a
    # JUDGE_ERROR, the settings reached the next case, the judge spun until the limit
    "fifo_log": (SANDBOXES, {Verdict.OK}),
    "taint_agent": (SANDBOXES, {Verdict.OK}),
    "close_and_deaf": (SANDBOXES, {Verdict.RUNTIME_ERROR, Verdict.TIME_LIMIT}),
}
AGENT_GRACE_S = 5.0  # docker_agent's, for a stopped supervisor


def _params() -> list:
    return [
        pytest.param(kind, p.values[0], marks=p.marks, id=f"{kind}-{p.id}")
        for kind, (sandboxes, _) in KINDS.items()
        for p in sandboxes
    ]


def attack_package(root: Path, time_limit_s: float) -> Path:
    rng = random.Random(41)
    cases = {
        "a-hostile": trace_text(random_trace(rng, 3000)),
        "b-clean": trace_text(random_trace(rng, 100)),
    }
    return make_package(root, cases, time_limit_s=time_limit_s)


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return attack_package(tmp_path_factory.mktemp("attacks"), LIMIT_S)


@pytest.mark.parametrize(("kind", "sandbox"), _params())
def test_attack_is_a_fault_of_its_case(package: Path, tmp_path: Path, kind: str, sandbox: str):
    source = tmp_path / "allocator.py"
    source.write_text(HOSTILE.replace("KIND_NAME", kind))
    start = time.monotonic()
    report = judge_planner(load_problem(package), source, sandbox=sandbox, build_cache=None)
    elapsed = time.monotonic() - start
    hostile, clean = report.results
    assert hostile.verdict in KINDS[kind][1], (hostile.verdict, hostile.message, hostile.log)
    assert hostile.time_s is not None and hostile.time_s < LIMIT_S + AGENT_GRACE_S + 1
    assert clean.verdict == Verdict.OK, (clean.verdict, clean.message, clean.log)
    assert elapsed < LIMIT_S + AGENT_GRACE_S + 30
    if kind == "close_and_deaf" and sandbox == "docker":  # bubblewrap holds the pipe open
        assert hostile.time_s < LIMIT_S / 2, hostile.time_s  # told at once, no busy wait


# Reads stdin itself, never blocking past what the judge wrote: after each request line
# the pipe must be empty (the next event is written only after the answer), and no
# file of the case's events is anywhere it can see.
PEEK = """\
import os, sys
def bad(why):
    print(why, flush=True); sys.exit(0)
for top, dirs, files in os.walk("/"):
    if top.startswith(("/proc", "/sys", "/dev")):
        dirs[:] = []
        continue
    if any(f.endswith(".events") for f in files):
        bad("an events file at " + top)
if os.listdir(os.environ["MEMORACE_CASE_DIR"]) != ["case.json"]:
    bad("more than case.json in the case folder")
live, top, buffer = {}, 0, b""
while True:
    chunk = os.read(0, 1 << 16)
    if not chunk:
        break
    buffer += chunk
    lines = buffer.split(b"\\n")
    buffer = lines.pop()
    for k, line in enumerate(lines):
        w = line.decode().split()
        if w[0] == "a":
            if k != len(lines) - 1 or buffer:
                bad("an event after a request before its answer")
            os.set_blocking(0, False)
            try:
                more = os.read(0, 1)
            except BlockingIOError:
                more = None
            os.set_blocking(0, True)
            if more is not None:
                bad("bytes after a request before its answer")
            align = int(w[3])
            top = -(-top // align) * align
            os.write(1, f"{top}\\n".encode())
            top += int(w[2])
"""


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_no_future_on_stdin_or_disk(tmp_path: Path, sandbox: str) -> None:
    # Walking every file it can see takes longer than the attacks' 2 s on a big host
    # (CI: TIME_LIMIT once with the local sandbox, which sees the host's tree): 60 s.
    package = attack_package(tmp_path / "pkg", 60.0)
    source = tmp_path / "peek.py"
    source.write_text(PEEK)
    report = judge_planner(load_problem(package), source, sandbox=sandbox, build_cache=None)
    for result in report.results:
        assert result.verdict == Verdict.OK, (result.verdict, result.message, result.log)


ODD_ANSWERS = {
    "+0": Verdict.BAD_OUTPUT,
    "-0": Verdict.BAD_OUTPUT,
    "\u0663": Verdict.BAD_OUTPUT,  # an Arabic-Indic digit: not ASCII
    "1" + "0" * 19: Verdict.BAD_OUTPUT,  # past 2^62
    str(2**62): Verdict.INVALID_PLAN,  # an offset, past the capacity
    str(2**62 - 1): Verdict.INVALID_PLAN,  # odd: misaligned or past the capacity
}


def test_odd_answers_and_rescore_agree(tmp_path: Path) -> None:
    """Each odd first answer is its fault; every kept transcript re-verified as a
    rescore does (check_plan on the stored file) gives the judged verdict and score."""
    trace = trace_text(random_trace(random.Random(43), 300))
    problem = load_problem(make_package(tmp_path, {"odd": trace}, time_limit_s=LIMIT_S))
    cases = {lc.spec.name: lc for lc in load_cases(problem)}
    kept: dict[str, bytes] = {}
    sources = {f"odd{i}": answer for i, answer in enumerate(ODD_ANSWERS)}
    sources["first_fit"] = ""
    for label, answer in sources.items():
        source = tmp_path / f"{label}.py"
        if answer:
            # answers the first request so, then leaves (a rule broken first wins)
            source.write_text(
                "import sys\nfor line in sys.stdin:\n    if line.startswith('a '):\n"
                f"        sys.stdout.write({answer!r} + '\\n'); sys.stdout.flush(); break\n"
            )
        else:
            source.write_text(FIRST_FIT_PY)
        report = judge_planner(
            problem,
            source,
            sandbox="local",
            build_cache=None,
            keep_plan=lambda path, digest: kept.__setitem__(digest, path.read_bytes()),
        )
        for result in report.results:
            if answer:
                assert result.verdict == ODD_ANSWERS[answer], (answer, result.message)
            if result.verdict not in (Verdict.OK, Verdict.INVALID_PLAN):
                continue
            stored = tmp_path / f"{label}-{result.case}.csv"
            stored.write_bytes(kept[result.plan_digest])
            lc = cases[result.case]
            verification, score = check_plan(problem.ptype, lc.case, lc.lower_bound, stored)
            assert (verification.verdict, score, verification.peak) == (
                result.verdict,
                result.score,
                result.peak,
            ), (label, result.case)
