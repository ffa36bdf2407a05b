"""Every reader of outside input, fed random and mutated bytes, deep nesting and huge
integers: only the documented errors (judge.errors.InputError and its family) may
escape, never a traceback (issue 9). 10,000 inputs per reader from a seeded sweep of
plain random draws (fast), and 2,000 more from hypothesis (its edge-first search).

Seeds are small valid inputs cut from the shipped problems (a few rows, steps and
tensors each), so that mutations reach the checks behind the syntax; a parsed plan
is also verified and scored, which must not raise either.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judge.errors import CaseError, PlanError
from judge.types import get_type
from judge.types.offload import case as offload_case
from judge.types.offload import plan as offload_plan
from judge.types.offset import case as offset_case
from judge.types.offset import plan as offset_plan
from tests.fuzzing import (
    FUZZ,
    OFFLOAD_CASES,
    OFFLOAD_PARSED,
    OFFLOAD_PLAN_INPUTS,
    OFFLOAD_PLANS,
    OFFSET_CASES,
    OFFSET_PARSED,
    OFFSET_PLAN_INPUTS,
    OFFSET_PLANS,
    inputs,
    random_input,
    sweep,
)


def test_seeds_are_valid():
    assert len(OFFSET_CASES) >= 5 and len(OFFLOAD_CASES) >= 5
    for case, plan in zip(OFFSET_PARSED, OFFSET_PLANS, strict=True):
        offset_plan.parse_plan_bytes(plan, "plan.csv", case)
    for case, plan in zip(OFFLOAD_PARSED, OFFLOAD_PLANS, strict=True):
        offload_plan.parse_plan_bytes(plan, "plan.json", case)


# --- case and plan readers -----------------------------------------------------------------------


def check_everything(type_name: str, case: Any, plan: Any) -> None:
    """Verifying and scoring a parsed plan never raises."""
    ptype = get_type(type_name)
    bound = ptype.lower_bound(case)
    ptype.score(case, bound, ptype.verify(case, plan))


# type -> (parse a case from bytes, its fuzzed inputs, capacities, parse a plan, plan name)
READERS: dict[str, tuple[Any, ...]] = {
    "offset": (offset_case.parse_case_bytes, inputs(OFFSET_CASES), [0, 16, 2**62],
               offset_plan.parse_plan_bytes, "plan.csv"),
    "offload": (offload_case.parse_case_bytes, inputs(OFFLOAD_CASES), [None, 16],
                offload_plan.parse_plan_bytes, "plan.json"),
}  # fmt: skip
PLAN_SEEDS = {
    "offset": list(zip(OFFSET_PARSED, OFFSET_PLAN_INPUTS, strict=True)),
    "offload": list(zip(OFFLOAD_PARSED, OFFLOAD_PLAN_INPUTS, strict=True)),
}


@pytest.mark.parametrize("kind", ["offset", "offload"])
@FUZZ
@given(data=st.data())
def test_case_reader(kind: str, data: st.DataObject):
    _, fuzzed, capacities, _, _ = READERS[kind]
    read_case(kind, data.draw(fuzzed), data.draw(st.sampled_from(capacities)))


def read_case(kind: str, raw: bytes, capacity: int | None) -> None:
    parse = READERS[kind][0]
    try:
        case = parse(raw, "case", capacity)
    except CaseError:
        return
    get_type(kind).lower_bound(case)


@pytest.mark.parametrize("kind", ["offset", "offload"])
@FUZZ
@given(data=st.data())
def test_plan_reader(kind: str, data: st.DataObject):
    case, fuzzed = data.draw(st.sampled_from(PLAN_SEEDS[kind]))
    read_plan(kind, case, data.draw(fuzzed))


def read_plan(kind: str, case: Any, raw: bytes) -> None:
    _, _, _, parse, name = READERS[kind]
    try:
        plan = parse(raw, name, case)
    except PlanError:
        return
    check_everything(kind, case, plan)


@pytest.mark.parametrize("kind", ["offset", "offload"])
def test_case_and_plan_readers_on_a_seeded_sweep(kind: str):
    _, fuzzed, capacities, _, _ = READERS[kind]

    def draw_case(rng: random.Random) -> tuple[Any, ...]:
        return kind, random_input(rng, fuzzed), rng.choice(capacities)

    def draw_plan(rng: random.Random) -> tuple[Any, ...]:
        case, plans = rng.choice(PLAN_SEEDS[kind])
        return kind, case, random_input(rng, plans)

    sweep(read_case, draw_case)
    sweep(read_plan, draw_plan)


def test_file_readers_refuse_what_is_not_a_file(tmp_path: Path):
    (tmp_path / "dir").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "dir")
    for name in ("dir", "link", "missing"):
        with pytest.raises(CaseError):
            offload_case.read_case(tmp_path / name, None)
        with pytest.raises(PlanError):
            offload_plan.read_plan(tmp_path / name, OFFLOAD_PARSED[0])
        with pytest.raises(CaseError):
            offset_case.read_case(tmp_path / name, 16)
        with pytest.raises(PlanError):
            offset_plan.read_plan(tmp_path / name, OFFSET_PARSED[0])
