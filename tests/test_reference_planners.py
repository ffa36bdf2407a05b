"""Reference planners end to end through the pipeline, on shipped and real problems."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from judge.importer import import_minimalloc
from judge.package import load_problem
from judge.pipeline import JudgeReport, judge_planner
from judge.verdict import Verdict
from tests.conftest import ROOT, shared_data

PLANNERS = ROOT / "reference_solutions"
SHIPPED = sorted(  # the `offset` problems; offload planners have tests/test_offload_planners.py
    p.name
    for p in (ROOT / "problems").iterdir()
    if (p / "problem.toml").is_file() and load_problem(p).type == "offset"
)


@functools.cache
def judged(slug: str, planner: str, time_limit_s: float | None = None) -> JudgeReport:
    """One judging per (problem, planner) for the whole module: they take seconds."""
    problem = load_problem(ROOT / "problems" / slug)
    return judge_planner(problem, PLANNERS / planner, time_limit_s=time_limit_s)


@pytest.fixture(scope="module")
def minimalloc(tmp_path_factory):
    return import_minimalloc(shared_data("minimalloc"), tmp_path_factory.mktemp("mm"), "mm")


def test_at_least_two_problems_ship():
    assert len(SHIPPED) >= 2


@pytest.mark.parametrize("slug", SHIPPED)
@pytest.mark.parametrize("planner", ["naive.py", "greedy_size.cpp", "best_fit.cpp"])
def test_simple_planners_are_valid_on_every_shipped_case(slug, planner):
    report = judged(slug, planner)
    bad = [(r.case, r.verdict, r.message) for r in report.results if r.verdict != Verdict.OK]
    assert not bad


@pytest.mark.parametrize("slug", SHIPPED)
def test_shipped_cases_discriminate_greedy_by_size(slug):
    """On every shipped case greedy by size ends at least 3 % above the lower bound."""
    report = judged(slug, "greedy_size.cpp")
    easy = [
        (r.case, r.peak / r.lower_bound) for r in report.results if r.peak < 1.03 * r.lower_bound
    ]
    assert not easy


@pytest.mark.slow
@pytest.mark.parametrize("slug", SHIPPED)
def test_strong_planner_is_valid_on_every_shipped_case(slug):
    report = judged(slug, "strong_search.cpp", 4)
    assert {r.verdict for r in report.results} == {Verdict.OK}
    greedy = judged(slug, "greedy_size.cpp")
    for strong, base in zip(report.results, greedy.results, strict=True):
        assert strong.peak <= base.peak, strong.case  # it starts from the greedy plans


@pytest.mark.slow
def test_strong_planner_fits_every_minimalloc_case(minimalloc):
    report = judge_planner(minimalloc, PLANNERS / "strong_search.cpp", time_limit_s=60)
    for r in report.results:
        assert r.verdict == Verdict.OK, (r.case, r.message)
        assert r.time_s < 60


def test_greedy_planners_overflow_the_tight_minimalloc_cases(minimalloc):
    """The capacity matters: simple greedy plans do not fit A (lower bound = capacity)."""
    report = judge_planner(minimalloc, PLANNERS / "greedy_size.cpp", split="public")
    a = next(r for r in report.results if r.case == "A")
    assert a.verdict == Verdict.INVALID_PLAN and "past the capacity 1048576" in a.message


def test_imported_package_round_trips(minimalloc, tmp_path):
    assert load_problem(Path(minimalloc.root)).cases == minimalloc.cases
