"""Fair timing: a worker slot owns whole cores (judge.sandbox.cores). Workers claim
different cores and a dead worker's cores are free again at once; a CPU-bound planner
judged in its slot runs on its core alone beside three busy neighbours (other slots'
planners, crowded on the remaining cores), with the same score, in both sandboxes.

The planners prove where they ran by writing a valid plan only there; the times are
printed with their ratio, not asserted (this machine's wall times swing by 30 %).
Unpinned (planner and neighbours free to use any core) the same planner took 1.7x
(local) and 1.8x (docker) as long beside the neighbours as alone (measured
2026-12-06, docs/operator/workers.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import suppress
from pathlib import Path

import psutil
import pytest

from judge.sandbox.cores import CoreSpecError, cpulist, parse_cpulist
from tests.conftest import ROOT
from tests.service import wait_for
from tests.test_package import make_package
from tests.test_sandbox import SANDBOXES

# Timing or the whole host: make test runs it alone, after the rest.
pytestmark = pytest.mark.serial

GOOD_PLAN = (
    "open(os.path.join(os.environ['MEMORACE_OUT_DIR'], 'plan.csv'), 'w')"
    ".write('id,offset\\na,0\\nb,8\\n')\n"
)
WORK = "x = 0\nfor i in range(9_000_000):\n    x += i * i\n"  # about a second of one core
# A planner writes its (valid) plan only when it runs on exactly the cores given.
ON_CORES = "if sorted(os.sched_getaffinity(0)) == {cores}:\n    "
SPIN = "t = time.monotonic()\nwhile time.monotonic() - t < {s}:\n    pass\n"
CORES = sorted(os.sched_getaffinity(0))

# A judging process as a worker runs it: its slot's cores claimed (explicitly here),
# then one planner judged; prints the case's time and score.
DRIVER = """
import json, sys
from pathlib import Path
from judge.sandbox.cores import claim
from judge.package import load_problem
from judge.pipeline import judge_planner
pkg, source, sandbox, cores, lock_dir = sys.argv[1:6]
if cores:
    claim(0, cores, Path(lock_dir))
r = judge_planner(load_problem(Path(pkg)), Path(source), "public", sandbox=sandbox,
                  time_limit_s=30, build_cache=None).results[0]
print(json.dumps({"verdict": str(r.verdict), "score": r.score, "time_s": r.time_s}))
"""


def test_core_lists_parse_and_bad_ones_are_refused():
    assert parse_cpulist("0-2,5") == {0, 1, 2, 5} and cpulist({3, 1}) == "1,3"
    for bad in ("", "a", "3-1", "1-", "-1", "0-99999"):
        with pytest.raises(CoreSpecError):
            parse_cpulist(bad)


CLAIMER = """
import sys, time
from pathlib import Path
from judge.sandbox.cores import claim, allowed
got = claim(1, "", Path(sys.argv[1]))
print(",".join(map(str, sorted(got.cores))), sorted(allowed()) == sorted(got.cores or allowed()),
      flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(len(CORES) < 2, reason="needs two cores")
def test_workers_claim_different_cores_and_a_dead_workers_are_free_again(tmp_path):
    def start() -> tuple[subprocess.Popen, str]:
        proc = subprocess.Popen(
            [sys.executable, "-c", CLAIMER, str(tmp_path)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        line = proc.stdout.readline().split()
        assert line[-1] == "True", line  # pinned to exactly what it claimed
        return proc, line[0] if len(line) == 2 else ""

    procs = [start() for _ in CORES]
    try:
        assert sorted(int(c) for _, c in procs) == CORES  # one core each
        extra, none = start()  # the cores ran out: not pinned, says so
        assert none == "" and extra.poll() is None
        extra.kill()
        procs[0][0].kill()
        procs[0][0].wait()
        again, core = start()  # a dead worker's core is free at once
        procs.append((again, core))
        assert core == procs[0][1]
    finally:
        for proc, _ in procs:
            proc.kill()
            proc.wait()


def _driver(pkg: Path, source: Path, sandbox: str, cores: str, tmp: Path) -> subprocess.Popen:
    argv = [sys.executable, "-c", DRIVER, str(pkg), str(source), sandbox, cores, str(tmp)]
    return subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, text=True)


def _result(proc: subprocess.Popen) -> dict:
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    return json.loads(out.strip().splitlines()[-1])


def _timed(pkg, planner, sandbox, cores, tmp, neighbours: str | None, spin: Path) -> dict:
    """The fastest of three judgings of `planner` on `cores` (noise only adds: a daemon's
    wake-up on its core is not the neighbours' doing), alone or beside three spinning
    neighbours judged on `neighbours`, started first and measured only once all three
    planners run (their containers' start-up is the engine's work, on any core)."""
    crowd = []
    if neighbours is not None:
        crowd = [_driver(pkg, spin, sandbox, neighbours, tmp) for _ in range(3)]
        wait_for(lambda: _planners_running() >= 3, 60, "three spinning neighbours")
        time.sleep(0.5)
    try:
        runs = [_result(_driver(pkg, planner, sandbox, cores, tmp)) for _ in range(3)]
        return min(runs, key=lambda r: r["time_s"])
    finally:
        for proc in crowd:
            assert _result(proc)["verdict"] == "OK"


def _planners_running() -> int:
    """Planner processes now running on this host (either sandbox: `python3 planner.py`)."""
    count = 0
    for proc in psutil.process_iter(["cmdline"]):
        with suppress(psutil.Error):
            cmd = proc.info["cmdline"] or [""]
            if Path(cmd[0]).name.startswith("python") and cmd[-1] == "planner.py":
                count += 1  # not bubblewrap's or the shell's line that starts it
    return count


@pytest.mark.skipif(len(CORES) < 2, reason="needs two cores")
@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_planner_beside_busy_neighbours_keeps_its_time_and_score(tmp_path, sandbox):
    pkg = make_package(tmp_path / "pkg")
    planner, spin = tmp_path / "work.py", tmp_path / "spin.py"
    planner.write_text("import os\n" + WORK + ON_CORES.format(cores=CORES[-1:]) + GOOD_PLAN)
    spin.write_text(
        "import os, time\n" + SPIN.format(s=16) + ON_CORES.format(cores=CORES[:-1]) + GOOD_PLAN
    )
    mine, others = str(CORES[-1]), cpulist(set(CORES[:-1]))
    runs = {
        "alone": _timed(pkg, planner, sandbox, mine, tmp_path, None, spin),
        "beside 3 busy neighbours": _timed(pkg, planner, sandbox, mine, tmp_path, others, spin),
    }
    for name, r in runs.items():
        print(f"{sandbox}: {name}: {r['time_s']:.3f} s, {r['verdict']} {r['score']}")
    alone, beside = runs["alone"], runs["beside 3 busy neighbours"]
    # OK: each planner ran on its own slot's cores alone (ON_CORES), the neighbours too
    assert alone["verdict"] == beside["verdict"] == "OK" and alone["score"] == beside["score"]
    # A figure, not an assertion: this 2-core VM's wall times swing by 30 % run to run
    # (a planner alone took 1.01 s, then 1.45 s), more than the 10 % to be shown.
    print(f"{sandbox}: beside / alone = {beside['time_s'] / alone['time_s']:.3f}")


@pytest.mark.skipif(len(CORES) < 2, reason="needs two cores")
@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_planner_cannot_widen_its_cores(tmp_path, sandbox):
    """An affinity is a wish any process may widen: a planner that asks for every core
    still runs on its slot's alone (docker's cpuset; the local sandbox's cpuset cgroup).
    It writes a valid plan only when its mask stayed one core."""
    pkg = make_package(tmp_path / "pkg")
    planner = tmp_path / "widen.py"
    planner.write_text(
        "import os\n"
        "try:\n    os.sched_setaffinity(0, range(os.cpu_count()))\nexcept OSError:\n    pass\n"
        "if len(os.sched_getaffinity(0)) == 1:\n    " + GOOD_PLAN
    )
    got = _result(_driver(pkg, planner, sandbox, str(CORES[-1]), tmp_path))
    assert got["verdict"] == "OK", got
