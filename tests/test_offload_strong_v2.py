"""The strong offload planner on v2 cases (reference_solutions/offload_strong_v2): its
archive is current, and run from that archive it writes valid plans at least as good
as greedy's, on random small v2 cases and on a shipped case (short time limits)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from judge.package import Limits
from judge.types.offload.case import parse_case
from judge.types.offload.plan import parse_plan
from judge.types.offload.verifier import simulate, verify
from judge.verdict import Verdict
from tests.conftest import ROOT, load_script
from tests.test_offload_planners_v2 import planner_cases

FOLDER = ROOT / "reference_solutions"
ARCHIVE = FOLDER / "offload_strong.tar.gz"


def load_pack() -> Any:
    return load_script(FOLDER / "offload_strong_v2" / "pack.py")


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("strong")
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(where, filter="data")
    return where


def test_the_archive_is_packed_from_the_current_sources():
    """Each member's name and bytes, not the compressed bytes: another zlib compresses
    the same tar differently. Says which members differ: a plain `assert a == b` of the
    archives' bytes made pytest's CI-mode (untruncated) diff run 8.5 minutes."""
    with tarfile.open(ARCHIVE) as tar:
        packed = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
        others = [m.name for m in tar.getmembers() if not m.isfile()]
    sources = {name: path.read_bytes() for name, path in load_pack().members()}
    stale = sorted(n for n in packed.keys() & sources.keys() if packed[n] != sources[n])
    missing, extra = sorted(sources.keys() - packed.keys()), sorted(packed.keys() - sources.keys())
    assert not (stale or missing or extra or others), (
        f"run offload_strong_v2/pack.py: stale {stale}, missing {missing}, "
        f"not from the sources {extra + others}"
    )


def run(program: Path, case: dict[str, Any], limit: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        (where / "c").mkdir()
        (where / "o").mkdir()
        limits = {**Limits(time_limit_s=limit).as_dict(), "name": "c"}  # as the pipeline writes
        (where / "c/case.json").write_text(json.dumps({"type": "offload", **limits, **case}))
        env = {**os.environ, "MEMORACE_CASE_DIR": str(where / "c"),
               "MEMORACE_OUT_DIR": str(where / "o")}  # fmt: skip
        done = subprocess.run([sys.executable, str(program)], env=env, cwd=program.parent,
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
        return json.loads((where / "o/plan.json").read_text())


def makespan(case: dict[str, Any], raw: dict[str, Any]) -> Fraction | None:
    """The plan's makespan, None when it breaks a rule (the host capacity, at most)."""
    parsed = parse_case(case, "case", case["capacity"])
    plan = parse_plan(raw, "plan", parsed)
    result = verify(parsed, plan)
    if result.verdict != Verdict.OK:
        assert "host memory" in result.message, result.message
        return None
    timing = simulate(parsed, plan)
    return Fraction(timing.makespan, timing.unit)


def strong_vs_greedy(unpacked: Path, case: dict[str, Any], limit: float) -> None:
    """Strong's plan is valid wherever greedy's is, and never slower."""
    strong = makespan(case, run(unpacked / "strong.py", case, limit))
    greedy = makespan(case, run(FOLDER / "offload_greedy" / "offload_greedy.py", case, limit))
    assert greedy is None or (strong is not None and strong <= greedy)


@settings(max_examples=int(os.environ.get("OFFLOAD_STRONG_EXAMPLES", "12")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.function_scoped_fixture])  # fmt: skip
@given(case=planner_cases())
def test_strong_is_valid_and_never_behind_greedy_on_small_v2_cases(unpacked, case):
    try:
        parse_case(case, "case", case["capacity"])
    except Exception:  # a case the importer refuses has no plans
        return
    strong_vs_greedy(unpacked, case, 4.5)


def test_strong_is_never_behind_greedy_on_a_shipped_case(unpacked):
    package = ROOT / "problems/train-offload"
    spec = next(c for c in tomllib.loads((package / "problem.toml").read_text())["cases"]
                if c["name"].startswith("p03"))  # fmt: skip
    path = package / "data" / spec["split"] / f"{spec['name']}.json"
    case = {**json.loads(path.read_text()), "capacity": spec["capacity"]}
    strong_vs_greedy(unpacked, case, 6.0)
