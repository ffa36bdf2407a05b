"""Reference planners end to end through the pipeline, on shipped and real problems."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import pytest

from benchmarks.filler_truths import read_guesses
from benchmarks.offset_planners import run_planner
from judge.importer import import_minimalloc
from judge.package import CaseSpec, Problem, load_problem
from judge.pipeline import JudgeReport, judge_planner
from judge.types import get_type
from judge.verdict import Verdict
from judge.verifier import check_plan
from scripts.offset_cases import generate, write_cases
from tests.conftest import ROOT, compiled, judged_locally, shared_data, shipped

PLANNERS = ROOT / "reference_solutions"
SHIPPED = sorted(  # the `offset` problems; offload planners have tests/test_offload_planners.py
    p.name
    for p in (ROOT / "problems").iterdir()
    if (p / "problem.toml").is_file() and load_problem(p).type == "offset"
)


judged = judged_locally  # one judging per (problem, planner) for the session: seconds each


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
    """On every public case greedy by size ends at least 3 % above the lower bound
    (`pytest -s -k discriminate` prints each case's figure). The hidden cases are each
    installation's own (seeded variations, problems/_lib/hidden.py): not searched for it."""
    report = judged(slug, "greedy_size.cpp")
    for r in report.results:
        print(f"{slug} {r.case}: greedy by size / lower bound = {r.peak / r.lower_bound:.4f}")
    easy = [
        (r.case, r.peak / r.lower_bound)
        for r in report.results
        if r.split == "public" and r.peak < 1.03 * r.lower_bound
    ]
    assert not easy


STRONG_LIMIT_S = 4  # the mixed set's limit (the problems allow 30)


@pytest.fixture(scope="module")
def strong_mixed(tmp_path_factory) -> tuple[Problem, JudgeReport]:
    """Strong judged once (one build: about 15 s of CPU) at STRONG_LIMIT_S on a mixed set:
    one generated MiniMalloc-like case (capacity = lower bound), the G_1 real trace
    (capacity 2^50), the smallest public case of each shipped `offset` problem and the
    largest shipped trace (gpt2-train's or llama-infer's largest: about 100k buffers; the
    hidden cases are the test seed's, tests/conftest.shipped). Strong
    runs until 80 % of the limit on every case not at its lower bound, so each case costs
    about 3 s."""
    generated = write_cases(tmp_path_factory.mktemp("gen"), 1, seed=7)[0]
    cases = [
        CaseSpec("generated", "public", 1 << 20, 1.0, generated),
        CaseSpec("G_1", "public", 1 << 50, 1.0, shared_data("idealloc", "G_1.csv")),
    ]
    every = []
    for slug in SHIPPED:
        full = load_problem(shipped(slug))
        named = [dataclasses.replace(c, name=f"{slug}/{c.name}") for c in full.cases]
        every += named
        cases.append(min(named, key=lambda c: (c.split != "public", c.path.stat().st_size)))
    cases.append(max(every, key=lambda c: c.path.stat().st_size))
    base = load_problem(ROOT / "problems" / SHIPPED[0])
    problem = dataclasses.replace(base, slug="strong-mixed", cases=cases)
    report = judge_planner(problem, PLANNERS / "strong_search.tar.gz", time_limit_s=STRONG_LIMIT_S)
    assert [r.case for r in report.results] == [c.name for c in cases]
    return problem, report


@pytest.mark.slow
def test_strong_planner_is_valid_on_the_largest_shipped_traces(strong_mixed):
    """Under a short limit strong always has a valid plan in time, on the largest shipped
    trace too, and it is at or below greedy by size wherever greedy by size is cheap
    (under an eighth of the limit)."""
    _, report = strong_mixed
    for strong in report.results:
        slug, _, name = strong.case.partition("/")
        if slug not in SHIPPED:
            continue
        assert strong.verdict == Verdict.OK, (strong.case, strong.message)
        greedy = next(r for r in judged(slug, "greedy_size.cpp").results if r.case == name)
        if greedy.time_s < STRONG_LIMIT_S / 8:
            assert strong.peak <= greedy.peak, strong.case


@pytest.mark.slow
def test_strong_planner_is_never_above_best_fit(strong_mixed):
    """On the mixed set strong's plan is never higher than best_fit's: it starts from
    best_fit's plans. Whether strong fits generated cases in time is measured by
    benchmarks/offset_planners.py, not asserted."""
    problem, strong = strong_mixed
    best = judge_planner(problem, PLANNERS / "best_fit.cpp")
    for s, b in zip(strong.results, best.results, strict=True):
        assert s.verdict == Verdict.OK or "past the capacity" in s.message, (s.case, s.message)
        assert s.peak <= b.peak, s.case


@pytest.mark.slow
def test_strong_planner_fits_every_minimalloc_case(minimalloc):
    """All of A-F at the capacity. Strong stops as soon as a plan reaches the lower
    bound (A, B, E, F: about 5 s of CPU to the first fit in all); on C and D (lower bound
    below the capacity) it tightens until 80 % of the limit. The target is 10 s
    (benchmarks/offset_planners.py); 12 s leaves room for a loaded machine."""
    report = judge_planner(minimalloc, PLANNERS / "strong_search.tar.gz", time_limit_s=12)
    for r in report.results:
        assert r.verdict == Verdict.OK, (r.case, r.message)
        assert r.time_s < 12


# Generated seeds whose removed pieces end where others begin (the deficit profile shows
# only the net change): the planner before the cheapest-decomposition guesses (d50c6e9)
# missed each at 10 s; now each fits in 0.07-0.4 s of CPU.
HIDDEN_JOINTS = (3032, 3051, 3055, 3064)


@pytest.mark.slow
def test_strong_planner_fits_generated_cases_whose_deficit_hides_joints(tmp_path):
    """Capacity = lower bound; 10 s (the benchmark's limit) leaves 20x room for a loaded
    machine. The fraction fitted over hundreds of seeds is benchmarks/offset_planners.py's."""
    cases = []
    for seed in HIDDEN_JOINTS:
        path = tmp_path / f"hard-{seed}.csv"
        path.write_text(generate(seed).csv())
        cases.append(CaseSpec(f"hard-{seed}", "public", 1 << 20, 1.0, path))
    base = load_problem(ROOT / "problems" / SHIPPED[0])
    problem = dataclasses.replace(base, slug="strong-joints", cases=cases)
    report = judge_planner(problem, PLANNERS / "strong_search.tar.gz", time_limit_s=10)
    for r in report.results:
        assert r.verdict == Verdict.OK, (r.case, r.message)


def test_greedy_planners_overflow_the_tight_minimalloc_cases(minimalloc):
    """The capacity matters: simple greedy plans do not fit A (lower bound = capacity)."""
    report = judge_planner(minimalloc, PLANNERS / "greedy_size.cpp", split="public")
    a = next(r for r in report.results if r.case == "A")
    assert a.verdict == Verdict.INVALID_PLAN and "past the capacity 1048576" in a.message


def test_imported_package_round_trips(minimalloc, tmp_path):
    assert load_problem(Path(minimalloc.root)).cases == minimalloc.cases


def _load_changes(rows) -> dict[int, int]:
    """Load change at each time of (lower, upper, size) rows (one pass, no pair loop)."""
    changes: dict[int, int] = {}
    for lo, up, size in rows:
        changes[lo] = changes.get(lo, 0) + size
        changes[up] = changes.get(up, 0) - size
    return changes


@pytest.fixture(scope="module")
def strong_exe() -> Path:
    return compiled(PLANNERS / "strong_search")


NO_MERGE = {"STRONG_SEARCH_NO_MERGE": "1"}  # the search as before the sibling merges

# Generated seeds the planner before the sibling merges (6053cc2) missed at 10 s, fitted
# by the case with every sibling merged (0.02 s of CPU each), and 3811, whose full merge
# chains two pieces that were not siblings, so no plan fits it: stacks only fit it.
MERGED_FITS = ((942, "all siblings"), (1543, "all siblings"), (3811, "stacks only"))


@pytest.mark.slow
@pytest.mark.parametrize("seed, merge", MERGED_FITS)
def test_merged_siblings_fit_generated_cases(seed, merge, strong_exe, tmp_path):
    """The merged guess that fits is the expected one (the verbose log says which), and
    the plan, expanded back to the case's own buffers, is valid at the capacity."""
    case = generate(seed)
    csv, plan, stderr = _run_planner(strong_exe, case, tmp_path, {"STRONG_SEARCH_VERBOSE": "1"})
    assert re.search(rf"merged guess \({merge}\): \d+ buffers, fits", stderr), stderr[-2000:]
    offset = get_type("offset")
    parsed = offset.parse_case(csv, case.capacity)
    verification, _ = check_plan(offset, parsed, offset.lower_bound(parsed), plan)
    assert verification.verdict == Verdict.OK, verification


@pytest.mark.slow
@pytest.mark.parametrize("seed", [3032, 933])  # 933: the likelihood order completes none
def test_every_decomposer_guess_fills_the_deficit_exactly(seed, strong_exe, tmp_path):
    """The guesses strong_search writes with STRONG_SEARCH_GUESSES (the diagnostic
    behind benchmarks/filler_truths.py --ranks): each, added to the buffers, loads
    every time of the horizon to exactly the capacity, and no two are the same."""
    case, dump = generate(seed), tmp_path / "g.csv"
    env = {"STRONG_SEARCH_GUESSES": str(dump), **NO_MERGE}  # the merged guess would fit first
    _run_planner(strong_exe, case, tmp_path, env)
    assert dump.read_text().split()[0] == "guess,lower,upper,size"
    guesses = read_guesses(dump)
    assert len(guesses) >= 16
    start, end = min(lo for lo, _, _ in case.rows), max(up for _, up, _ in case.rows)
    keys = set()
    for fillers in guesses.values():
        load, changes = 0, _load_changes(case.rows + fillers)
        for t in sorted(changes):
            load += changes[t]
            assert load == (case.capacity if start <= t < end else 0), (t, load)
        keys.add(tuple(sorted(fillers)))
    assert len(keys) == len(guesses)


def _run_planner(exe: Path, case, tmp_path: Path, env: dict[str, str]) -> tuple[Path, Path, str]:
    """Runs `exe` on `case` for 3 s of its own time limit; returns the case's CSV, the
    plan.csv it wrote and its stderr."""
    csv = tmp_path / "c.csv"
    csv.write_text(case.csv())
    parsed = get_type("offset").parse_case(csv, case.capacity)
    plan, status, stderr, *_ = run_planner(exe, parsed, tmp_path, 3, env)
    assert os.waitstatus_to_exitcode(status) == 0, stderr[-2000:]
    return csv, plan, stderr


@pytest.fixture(scope="module")
def checked_floors_exe() -> Path:
    """strong_search built with STRONG_SEARCH_CHECK_FLOORS (about 15 s: once for all seeds)."""
    return compiled(PLANNERS / "strong_search", ("STRONG_SEARCH_CHECK_FLOORS",))


@pytest.mark.slow
@pytest.mark.parametrize(
    "seed, env",  # the search's own fit; every search the planner has, merged ones first
    [(902, NO_MERGE), (1337, {}), (3032, NO_MERGE)],  # padded searches all along
)
def test_every_exact_section_floor_the_search_reads_is_the_minimum(
    seed, env, checked_floors_exe, tmp_path
):
    """Exact floors are kept by witness (refreshFloor) and made exact only where
    an answer needs them (sectionsFit, narrowToTightSection): a build with
    STRONG_SEARCH_CHECK_FLOORS recomputes each floor they read from the section's
    unplaced members and aborts when an exact one differs or a stored one (read as
    a lower bound) is above it, through plain and padded searches (their undo
    included); the plan it writes places every buffer."""
    csv, plan, _ = _run_planner(checked_floors_exe, generate(seed), tmp_path, env)
    offset = get_type("offset")  # 1337 does not fit: its plan is checked without a capacity
    parsed = offset.parse_case(csv, 1 << 50)
    verification, _ = check_plan(offset, parsed, offset.lower_bound(parsed), plan)
    assert verification.verdict == Verdict.OK, verification
