"""Hostile `online` allocators, each judged in both sandboxes: a verdict within the case's
limit (never a hang of the judge), the event where it happened, and the next case of
the same judging starts clean (no process of the hostile one left)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from judge.package import load_problem
from judge.pipeline import judge_planner
from judge.verdict import Verdict
from tests.online_cases import hostile_allocator, make_package, random_trace, trace_text
from tests.test_sandbox import SANDBOXES

LIMIT_S = 3.0
# Filling 1 GiB page by page is CPU work: on a loaded 2-core machine (four busy
# processes) a hog took over 3 s to reach the limit and was told TIME_LIMIT. Its verdict
# is what is tested, not its speed, so its case gets more time.
LIMIT_S_BY_KIND = {"memory": 15.0}

_HOOK = """\
    if w[0] == "a" and KIND != "clean":
        hostile(int(w[1][1:]))
        if KIND == "overlap":
            print(0, flush=True)
            continue
"""

# Case "a-hostile" gets the misbehaviour, case "b-clean" a first fit that fails loudly
# (garbage) if anything of an earlier case is still there (online_cases.CLEAN_CHECK).
HOSTILE = hostile_allocator(
    """\
def hostile(n):
    if KIND == "silent" and n == 3:
        time.sleep(600)
    if KIND == "garbage" and n == 3:
        print("twelve", flush=True); time.sleep(600)
    if KIND == "twice" and n == 3:
        sys.stdout.write("0\\n0\\n"); sys.stdout.flush()
        time.sleep(600)
    if KIND == "close_stdout" and n == 3:
        os.close(1); time.sleep(600)
    if KIND == "flood_stderr" and n == 3:
        chunk = "x" * (1 << 20)
        while True:
            sys.stderr.write(chunk)
    if KIND == "fork_child" and n == 0 and os.fork() == 0:
        os.execvp("sh", ["sh", "-c", "sleep 60 # MARK"])
    if KIND == "exit_early" and n == 3:
        sys.exit(0)
    if KIND == "crash" and n == 3:
        raise RuntimeError("boom")
    if KIND == "long_line" and n == 3:
        sys.stdout.write("7" * (1 << 20)); sys.stdout.flush(); time.sleep(600)
    if KIND == "memory" and n == 3:
        hog = [bytearray(1 << 26) for _ in range(64)]
    if KIND == "fill_tmp" and n == 3:
        with open("/tmp/fill", "wb") as f:
            while True:
                f.write(b"x" * (1 << 20)); f.flush()
if KIND == "deaf":
    time.sleep(600)
""",
    _HOOK,
    """\
if KIND == "past_end":
    assert sys.stdin.read() == "" and sys.stdin.read() == ""
""",
)

# kind -> the verdicts allowed ("close_stdout": bubblewrap holds a copy of the pipe,
# so the judge sees silence, not a closed stdout, until the limit)
KINDS = {
    "silent": {Verdict.TIME_LIMIT},
    "deaf": {Verdict.TIME_LIMIT},
    "garbage": {Verdict.BAD_OUTPUT},
    "twice": {Verdict.BAD_OUTPUT, Verdict.INVALID_PLAN},
    "past_end": {Verdict.OK},
    "close_stdout": {Verdict.RUNTIME_ERROR, Verdict.BAD_OUTPUT, Verdict.TIME_LIMIT},
    "flood_stderr": {Verdict.OUTPUT_LIMIT},
    "fork_child": {Verdict.OK},
    "exit_early": {Verdict.BAD_OUTPUT},
    "crash": {Verdict.RUNTIME_ERROR},
    "overlap": {Verdict.INVALID_PLAN},
    "long_line": {Verdict.BAD_OUTPUT},
    "memory": {Verdict.MEMORY_LIMIT, Verdict.RUNTIME_ERROR},
    "fill_tmp": {Verdict.OUTPUT_LIMIT, Verdict.RUNTIME_ERROR},  # its write fails: EFBIG
}


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory) -> Callable[[float], Path]:
    """The package of a time limit, made once per limit."""
    made: dict[float, Path] = {}

    def make(limit_s: float) -> Path:
        if limit_s not in made:
            rng = random.Random(35)
            # the hostile case is large enough that a deaf allocator fills the pipe's buffer
            hostile = trace_text(random_trace(rng, 8000))
            clean = trace_text(random_trace(rng, 200))
            root = tmp_path_factory.mktemp("hostile")
            cases = {"a-hostile": hostile, "b-clean": clean}
            made[limit_s] = make_package(root, cases, time_limit_s=limit_s)
        return made[limit_s]

    return make


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_hostile_allocator(
    packages: Callable[[float], Path], tmp_path: Path, sandbox: str, kind: str
) -> None:
    limit_s = LIMIT_S_BY_KIND.get(kind, LIMIT_S)
    package = packages(limit_s)
    source = tmp_path / "allocator.py"
    source.write_text(HOSTILE.replace("KIND_NAME", kind))
    start = time.monotonic()
    report = judge_planner(load_problem(package), source, sandbox=sandbox, build_cache=None)
    elapsed = time.monotonic() - start
    hostile, clean = report.results
    assert hostile.verdict in KINDS[kind], (kind, hostile.verdict, hostile.message, hostile.log)
    if hostile.verdict != Verdict.OK:
        assert "event" in hostile.message, hostile.message
    assert hostile.time_s is not None and hostile.time_s < limit_s + 2.0
    assert clean.verdict == Verdict.OK, (clean.verdict, clean.message, clean.log)
    assert elapsed < 2 * limit_s + 30  # the judging as a whole never hangs
