"""The C++ offset reference planners on cases with the widest values the contract
allows (times, sizes, alignments and capacity up to 2^62): each exits 0 and writes a
plan, and where one stacked above the other every buffer fits under 2^62, its plan is
valid there. strong_search once took a lower bound of 2^62 for "no plan yet" and
crashed (its 64-bit arithmetic now runs on such cases in units of 2^k bytes)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.offset_planners import run_planner
from judge.csvtable import INT_LIMIT
from judge.types import get_type
from judge.verdict import Verdict
from judge.verifier import check_plan
from tests.conftest import ROOT, compiled

OFFSET = get_type("offset")
PLANNERS = ("strong_search", "best_fit", "greedy_size")


@pytest.fixture(scope="module")
def planners() -> dict[str, Path]:
    return {name: compiled(_source(name)) for name in PLANNERS}


def _source(name: str) -> Path:
    """A planner's .cpp file, or its folder of modules (strong_search/: main.cpp)."""
    folder = ROOT / "reference_solutions" / name
    return folder if folder.is_dir() else folder.with_suffix(".cpp")


def _value(top: int):
    """Small, near a power of two, or anywhere up to `top` (edges first)."""
    near = st.integers(0, 62).flatmap(lambda k: st.integers(max(1, 2**k - 2), 2**k + 2))
    return st.one_of(st.integers(1, 64), near, st.integers(1, top)).map(lambda v: min(v, top))


@st.composite
def wide_cases(draw) -> tuple[list[tuple[int, int, int, int]], int]:
    rows = []
    for _ in range(draw(st.integers(1, 8))):
        lower = draw(_value(INT_LIMIT - 1))
        upper = draw(st.integers(lower + 1, min(INT_LIMIT, lower + draw(_value(INT_LIMIT)))))
        size = draw(_value(INT_LIMIT))
        align = draw(st.sampled_from([1, 1, 2, 1024, 3]) | _value(INT_LIMIT))
        rows.append((lower, upper, size, align))
    return rows, draw(st.sampled_from([INT_LIMIT, 2**61, 2**40]) | _value(INT_LIMIT))


def _stacked_height(rows) -> int:
    return sum(size + align - 1 for _, _, size, align in rows)


def _judge(exe: Path, rows, capacity: int, work: Path):
    csv = work / "c.csv"
    csv.write_text(
        "id,lower,upper,size,alignment\n"
        + "".join(
            f"b{i},{lo},{up},{size},{align}\n" for i, (lo, up, size, align) in enumerate(rows)
        )
    )
    case = OFFSET.parse_case(csv, capacity)
    plan, status, stderr, *_ = run_planner(exe, case, work, 0.3)
    assert os.waitstatus_to_exitcode(status) == 0, stderr[-2000:]
    assert plan.is_file(), stderr[-2000:]
    wide = OFFSET.parse_case(csv, INT_LIMIT)  # the same plan, judged against 2^62
    return check_plan(OFFSET, wide, OFFSET.lower_bound(wide), plan)[0]


@pytest.mark.slow
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=wide_cases())
def test_planners_write_a_valid_plan_for_the_widest_values(planners, case):
    rows, capacity = case
    for name, exe in planners.items():
        with tempfile.TemporaryDirectory() as tmp:
            verification = _judge(exe, rows, capacity, Path(tmp))
        if _stacked_height(rows) <= INT_LIMIT // 2:
            assert verification.verdict == Verdict.OK, (name, verification.message)


@pytest.mark.parametrize(
    "rows",
    [
        [(0, INT_LIMIT, INT_LIMIT, 1)],  # the lower bound is 2^62
        [(0, INT_LIMIT, INT_LIMIT // 2, 1), (0, INT_LIMIT, INT_LIMIT // 2, 1)],
        [(0, 5, 3, 2**61), (0, 5, 3, 2**61)],  # the second one sits at 2^61
        [(i, 1000 + i, 2**50 + i, 1) for i in range(3000)],  # 2^61.5 stacked
    ],
)
def test_strong_search_fits_cases_whose_values_reach_2_to_62(planners, rows, tmp_path):
    verification = _judge(planners["strong_search"], rows, INT_LIMIT, tmp_path)
    assert verification.verdict == Verdict.OK, verification.message
