"""worker.pacing on its own: which results are held, and for how long (the sleeps are
recorded, not slept; the service tests in test_final_judging time the real thing)."""

from __future__ import annotations

import time
from pathlib import Path

from judge.package import CaseSpec
from judge.scoring import CaseResult
from judge.verdict import Verdict
from worker.pacing import HiddenPace, budget_s


def spec(name: str, split: str) -> CaseSpec:
    return CaseSpec(name=name, split=split, capacity=1024, weight=1.0, path=Path(name))


def result(name: str, split: str) -> CaseResult:
    return CaseResult(name, split, 1.0, Verdict.OK, "", 16)


def test_hidden_results_are_held_to_their_budget_and_public_ones_are_not() -> None:
    slept: list[float] = []
    pace = HiddenPace(2.0, True, 1, hidden=2, sleep=slept.append)
    for name, split in (("pub", "public"), ("sec-0", "hidden"), ("sec-1", "hidden")):
        pace.start(spec(name, split))
        pace.hold(result(name, split))
    assert len(slept) == 2 and all(budget_s(2.0) - 0.5 < s <= budget_s(2.0) for s in slept)


def test_inactive_pacing_holds_nothing() -> None:
    slept: list[float] = []
    pace = HiddenPace(2.0, False, 1, hidden=1, sleep=slept.append)
    pace.start(spec("sec-0", "hidden"))
    pace.hold(result("sec-0", "hidden"))
    pace.hold_failure()
    assert slept == []


def test_a_judge_error_in_a_hidden_case_waits_for_every_hidden_case_left() -> None:
    slept: list[float] = []
    pace = HiddenPace(2.0, True, 1, hidden=3, sleep=slept.append)
    pace.start(spec("sec-0", "hidden"))
    pace.hold(result("sec-0", "hidden"))
    pace.start(spec("sec-1", "hidden"))  # fails: two hidden cases were left
    time.sleep(0.05)
    pace.hold_failure()
    assert 2 * budget_s(2.0) - 0.5 < slept[-1] < 2 * budget_s(2.0)


def test_a_judge_error_in_a_public_case_is_told_at_once() -> None:
    slept: list[float] = []
    pace = HiddenPace(2.0, True, 1, hidden=1, sleep=slept.append)
    pace.start(spec("pub", "public"))
    pace.hold_failure()
    assert slept == []
