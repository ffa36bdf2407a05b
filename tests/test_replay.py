"""The replay verifier (numpy backend) agrees with the exact verifier on every plan:
random ones, valid ones, and valid ones broken on purpose (overlap, early reuse,
missing copy-out, capacity, alignment), for both problem types."""

from __future__ import annotations

import copy
import json
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from judge.replay import replay
from judge.types.offload.case import parse_case as parse_offload_case
from judge.types.offload.plan import parse_plan as parse_offload_plan
from judge.types.offload.verifier import verify as verify_offload
from judge.types.offset.plan import OffsetPlan
from judge.types.offset.verifier import verify as verify_offset
from judge.verdict import Verdict
from judge.verifier import check_plan
from tests.conftest import ROOT
from tests.test_offload_verifier import any_pairs, valid_pairs, windows
from tests.test_offset_verifier import build, cases_and_plans, random_case_and_plan

# --- offset ---------------------------------------------------------------------------------


# Hypothesis spends most of this test's time drawing: 500 of its examples (edges first,
# shrinking), and the breadth of the 3,000 it used to take from a seeded sweep.
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases_and_plans())
def test_offset_replay_agrees_on_random_plans(data):
    offset_agree(*data)


def test_offset_replay_agrees_on_a_seeded_sweep_of_random_plans():
    rng = random.Random(3)
    for _ in range(6_000):
        offset_agree(*random_case_and_plan(rng))


def offset_agree(rows, offsets, capacity) -> None:
    case, plan = build(rows, offsets, capacity)
    exact = verify_offset(case, plan)
    replayed = replay("offset", case, plan)
    assert replayed.ok == (exact.verdict == Verdict.OK), (exact.message, replayed.message)


def first_fit(case) -> np.ndarray:
    """A valid plan for the mutations: first fit in lifespan order."""
    placed: list[tuple[int, int, int, int]] = []
    offsets = np.zeros(len(case), dtype=np.int64)
    for i in np.argsort(case.lower, kind="stable").tolist():
        lo, up, size, align = (
            int(x[i]) for x in (case.lower, case.upper, case.size, case.alignment)
        )
        live = sorted((o, e) for (o, e, l2, u2) in placed if l2 < up and lo < u2)
        at = 0
        for o, e in live:
            if at + size <= o:
                break
            at = max(at, -(-e // align) * align)
        offsets[i] = at
        placed.append((at, at + size, lo, up))
    return offsets


def offset_mutations(case, offsets: np.ndarray):
    """(kind, offsets): a buffer moved onto a live neighbour, past the end, misaligned."""
    rng = np.random.default_rng(7)
    for _ in range(40):
        a, b = (int(x) for x in rng.integers(0, len(case), 2))
        if a != b and case.lower[a] < case.upper[b] and case.lower[b] < case.upper[a]:
            moved = offsets.copy()
            moved[a] = offsets[b]
            yield "overlap", moved
    moved = offsets.copy()
    moved[0] = case.capacity
    yield "capacity", moved
    aligned = np.flatnonzero(case.alignment > 1)
    if aligned.size:
        moved = offsets.copy()
        moved[aligned[0]] += 1
        yield "alignment", moved


def test_offset_replay_agrees_on_a_shipped_case_and_its_mutations():
    from judge.types.offset.case import read_case

    path = min(
        (ROOT / "problems" / "gpt2-train" / "data").glob("*/*.csv"), key=lambda p: p.stat().st_size
    )
    case = read_case(path, 2**62)
    offsets = first_fit(case)
    kinds: Counter[str] = Counter()
    for kind, moved in [("valid", offsets), *offset_mutations(case, offsets)]:
        exact = verify_offset(case, OffsetPlan(moved))
        replayed = replay("offset", case, OffsetPlan(moved))
        assert replayed.ok == (exact.verdict == Verdict.OK), (kind, exact.message, replayed.message)
        kinds[f"{kind}:{exact.verdict}"] += 1
    assert kinds["valid:OK"] == 1 and kinds["overlap:INVALID_PLAN"] >= 5
    assert kinds["capacity:INVALID_PLAN"] == 1


# --- offload --------------------------------------------------------------------------------


def agree(case_raw, plan_raw, case=None) -> tuple[bool, str]:
    """`case`: case_raw already parsed (a plan broken in place over a big case)."""
    case = case or parse_offload_case(case_raw, "case", None)
    plan = parse_offload_plan(plan_raw, "plan", case)
    exact = verify_offload(case, plan)
    replayed = replay("offload", case, plan)
    assert replayed.ok == (exact.verdict == Verdict.OK), (exact.message, replayed.message)
    return replayed.ok, exact.message


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_pairs())
def test_offload_replay_agrees_on_random_plans(pair):
    agree(*pair)


def offload_mutations(case, plan):
    """Broken copies of a valid plan, one kind at a time."""
    rows = windows(case, plan)
    for w in rows:
        t, k = w["t"], w["k"]
        res = lambda p, t=t, k=k: p["tensors"][t]["residencies"][k]  # noqa: E731
        if k > 0:
            prev = rows[rows.index(w) - 1]
            if prev["last"] >= 1 and res(plan)["prefetch_after"] >= prev["last"]:
                broken = copy.deepcopy(plan)  # copy-in issued before the copy-out happened
                res(broken)["prefetch_after"] = prev["last"] - 1
                yield "missing copy-out", broken
            broken = copy.deepcopy(plan)  # copied in too late: after its first use
            res(broken)["prefetch_after"] = w["first"]
            yield "late copy-in", broken
        for v in rows:  # early reuse / overlap: take bytes of a residency live at the same time
            if v is not w and v["begin"] <= w["end"] and w["begin"] <= v["end"]:
                broken = copy.deepcopy(plan)
                res(broken)["offset"] = v["res"]["offset"]
                yield "overlap", broken
                break
        broken = copy.deepcopy(plan)
        res(broken)["offset"] = case["capacity"]
        yield "capacity", broken
        if case["tensors"][t]["alignment"] > 1:
            broken = copy.deepcopy(plan)
            res(broken)["offset"] += 1
            yield "alignment", broken


KINDS: Counter[str] = Counter()


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_pairs())
def test_offload_replay_agrees_on_valid_plans_and_their_mutations(pair):
    case_raw, plan_raw = pair
    ok, message = agree(case_raw, plan_raw)
    assert ok, message
    for kind, broken in offload_mutations(case_raw, plan_raw):
        ok, _ = agree(case_raw, broken)
        KINDS[f"{kind}:{'ok' if ok else 'invalid'}"] += 1


def test_offload_mutation_corpus_covers_every_kind():
    """Runs after the property test above (same module, file order)."""
    for kind in ("missing copy-out", "late copy-in", "overlap", "capacity", "alignment"):
        assert KINDS[f"{kind}:invalid"] >= 20, KINDS


def test_a_disagreement_is_a_judge_error(tmp_path: Path, monkeypatch):
    """If the replay ever says otherwise than the exact verifier, the case is the judge's
    fault, never the contestant's zero."""
    import judge.replay as replay_module

    case_raw, plan_raw = json.loads(json.dumps(SMALL_CASE)), json.loads(json.dumps(SMALL_PLAN))
    (tmp_path / "plan.json").write_text(json.dumps(plan_raw))
    case = parse_offload_case(case_raw, "case", None)
    from judge.types import get_type

    ptype = get_type("offload")
    ok, score = check_plan(ptype, case, 20, tmp_path / "plan.json", replay_backend="numpy")
    assert ok.verdict == Verdict.OK and score == 1.0

    def lying(*args, **kwargs):
        return replay_module.ReplayResult(False, "replay: invented corruption", "numpy")

    monkeypatch.setattr(replay_module, "replay", lying)
    verdict, score = check_plan(ptype, case, 20, tmp_path / "plan.json", replay_backend="numpy")
    assert verdict.verdict == Verdict.JUDGE_ERROR and "disagree" in verdict.message and score == 0.0


SMALL_CASE = {
    "capacity": 8, "h2d_bandwidth": 8, "d2h_bandwidth": 8, "steps": [10, 10],
    "tensors": [{"id": "a", "size": 8, "alignment": 8, "uses": [0, 1]}],
}  # fmt: skip
SMALL_PLAN = {"tensors": [{"id": "a", "residencies": [{"offset": 0, "uses": 2}]}]}


@pytest.mark.parametrize("planner", ["offload_naive.py", "offload_greedy/offload_greedy.py"])
def test_replay_agrees_on_every_shipped_offload_case(planner, tmp_path):
    """Real plans from the reference planners, and each one broken in two ways."""
    import scripts.gpu_check as gpu_check
    from judge.package import load_cases, load_problem
    from tests.conftest import shipped

    problem = load_problem(shipped("train-offload"))  # with the tests' hidden cases
    gpu_check.PLANNERS["offload"] = planner
    checked = 0
    for lc in load_cases(problem):
        raw_plan = json.loads(gpu_check.make_plan(lc, problem, tmp_path).read_text())
        raw_case = lc.case.as_json()
        ok, message = agree(raw_case, raw_plan)
        assert ok, message
        checked += break_in_place(raw_case, raw_plan)
    assert checked >= 4 * len(problem.cases)


def break_in_place(case: dict, plan: dict) -> int:
    """Break a big plan one field at a time (and restore it): copying it per mutation
    would cost more than the checks. Returns how many broken plans were checked."""
    rows = windows(case, plan)
    rng = np.random.default_rng(11)
    later = [w for w in rows if w["k"] > 0 and "prefetch_after" in w["res"]]
    changes = []
    for w in rng.choice(rows, size=min(4, len(rows)), replace=False):
        changes += [(w["res"], "offset", case["capacity"])]
        if case["tensors"][w["t"]]["alignment"] > 1:
            changes += [(w["res"], "offset", w["res"]["offset"] + 1)]
    for w in later[:: max(1, len(later) // 4)]:
        prev = rows[rows.index(w) - 1]
        if prev["last"] >= 1:
            changes += [(w["res"], "prefetch_after", prev["last"] - 1)]  # before its copy-out
        changes += [(w["res"], "prefetch_after", w["first"])]  # too late
    parsed = parse_offload_case(case, "case", None)  # the case is never broken: read once
    for res, key, value in changes:
        old = res[key]
        res[key] = value
        ok, _ = agree(case, plan, parsed)
        res[key] = old
        assert not ok
    return len(changes)
