"""The `offload` lower bound's capacity term (judge/types/offload/bound.py, README
"Lower bound"): weights that do not all fit are fetched again in every pass. It never
passes the makespan of a valid plan (here the naive planner's, on random cyclic cases
whose capacity holds only part of the weights), and it is the largest term on them."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judge.types.offload.bound import _refetch_bound, exact_lower_bound
from judge.types.offload.case import parse_case
from judge.types.offload.plan import parse_plan
from judge.types.offload.verifier import verify
from judge.verdict import Verdict
from tests.test_offload_planners_v2 import run

SEEN: list[bool] = []


def test_weights_fetched_again_every_pass() -> None:
    """3 weights of 4 bytes, room for one, 3 passes of 1 µs steps at 1 byte/µs: each pass
    brings 12 - 4 bytes at least: 24 µs (each crossing once only says 12 + 7)."""
    uses = {f"w{i}": [i, i + 3, i + 6] for i in range(3)}
    raw = {"capacity": 4, "h2d_bandwidth": 1, "d2h_bandwidth": 1, "steps": [1] * 9,
           "tensors": [{"id": k, "size": 4, "alignment": 1, "uses": u, "start": "host",
                        "writes": []} for k, u in uses.items()]}  # fmt: skip
    assert exact_lower_bound(parse_case(raw, "case", None)) == 24


@st.composite
def cyclic_cases(draw: Any) -> dict[str, Any]:
    n = draw(st.integers(2, 5))
    passes = draw(st.integers(2, 6))
    sizes = [draw(st.integers(1, 8)) for _ in range(n)]
    compress = [draw(st.integers(0, s)) if draw(st.booleans()) else 0 for s in sizes]
    tensors = []
    for i in range(n):
        t: dict[str, Any] = {"id": f"w{i}", "size": sizes[i], "alignment": 1, "start": "host",
                             "writes": [], "uses": [p * n + i for p in range(passes)]}  # fmt: skip
        if compress[i]:
            t["compress"] = {"size": compress[i], "encode": 1, "decode": 1}
        tensors.append(t)
    return {
        "capacity": draw(st.integers(max(sizes), (max(sizes) + sum(sizes)) // 2)),
        "h2d_bandwidth": draw(st.integers(1, 3)),
        "d2h_bandwidth": 1,
        "steps": draw(
            st.lists(st.integers(0, 3), min_size=n * passes, max_size=n * passes).filter(any)
        ),
        "tensors": tensors,
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cyclic_cases())
def test_the_capacity_term_never_passes_a_valid_plan(raw) -> None:
    case = parse_case(raw, "case", None)
    plan_bytes, _ = run("naive", raw)
    result = verify(case, parse_plan(json.loads(plan_bytes), "plan", case))
    assert result.verdict == Verdict.OK, result.message
    bound = exact_lower_bound(case)
    assert bound <= Fraction(result.makespan)
    prefix = [0, *case.steps.cumsum().tolist()]
    SEEN.append(_refetch_bound(case, prefix) == bound)


def test_the_capacity_term_was_the_bound_on_some_cases() -> None:
    """Runs after the property test in file order."""
    if SEEN:
        assert any(SEEN), "the capacity term never decided the bound"
