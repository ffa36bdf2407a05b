"""The `offload` lower bound's capacity term (judge/types/offload/bound.py, README
"Lower bound"): weights that do not all fit are fetched again in every pass, over the
best set of disjoint windows. It never passes the makespan of a valid plan (here the
greedy planner's, run in-process, on random cyclic cases whose capacity holds only part
of the weights, some with a tensor used in every step and tensors made on the device),
and it is the largest term on some of them."""

from __future__ import annotations

import sys
from fractions import Fraction
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judge.types.offload.bound import _refetch_bound, exact_lower_bound
from judge.types.offload.case import parse_case
from judge.types.offload.plan import parse_plan
from judge.types.offload.rules import check
from judge.types.offload.simulate import simulate
from judge.types.offload.verifier import verify
from judge.verdict import Verdict
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "reference_solutions" / "offload_greedy"))  # its parts too
import offload_greedy as greedy

SEEN: list[bool] = []


def test_weights_fetched_again_every_pass() -> None:
    """3 weights of 4 bytes, room for one, 3 passes of 1 µs steps at 1 byte/µs: each pass
    brings 12 - 4 bytes at least: 24 µs (each crossing once only says 12 + 7)."""
    uses = {f"w{i}": [i, i + 3, i + 6] for i in range(3)}
    raw = {"capacity": 4, "h2d_bandwidth": 1, "d2h_bandwidth": 1, "steps": [1] * 9,
           "tensors": [{"id": k, "size": 4, "alignment": 1, "uses": u, "start": "host",
                        "writes": []} for k, u in uses.items()]}  # fmt: skip
    assert exact_lower_bound(parse_case(raw, "case", None)) == 24


def test_a_tensor_used_in_every_step_does_not_hide_the_passes() -> None:
    """As above, with a 1-byte tensor used in every step (a decode's running state):
    windows closed at every reuse would be single steps that each fit (the bound was then
    12 + 7, each weight crossing once); the passes still bring 12 - 5 bytes in the
    first (the state is made there) and 12 + 1 - 5 in each of the other two."""
    uses = {f"w{i}": [i, i + 3, i + 6] for i in range(3)}
    raw = {"capacity": 5, "h2d_bandwidth": 1, "d2h_bandwidth": 1, "steps": [1] * 9,
           "tensors": [{"id": k, "size": 4, "alignment": 1, "uses": u, "start": "host",
                        "writes": []} for k, u in uses.items()]
           + [{"id": "state", "size": 1, "alignment": 1, "uses": list(range(9))}]}  # fmt: skip
    assert exact_lower_bound(parse_case(raw, "case", None)) == 23


def test_weights_on_nvme_are_read_again_past_device_and_host_room() -> None:
    """3 weights of 4 bytes on NVMe (1 byte/µs), room for one on the device and one in
    host memory, 6 passes: each pass reads 12 - 4 - 4 bytes at least: 24 µs (the fast
    h2d link and the compute, 1 µs in all, say less; reading each once says 12 + 1)."""
    uses = {f"w{i}": [i + 3 * p for p in range(6)] for i in range(3)}
    raw = {"capacity": 4, "host_capacity": 4, "h2d_bandwidth": 100, "d2h_bandwidth": 100,
           "nvme": {"read_bandwidth": 1, "write_bandwidth": 1, "read_latency": 0,
                    "write_latency": 0},
           "steps": [0] * 17 + [1],
           "tensors": [{"id": k, "size": 4, "alignment": 1, "uses": u, "start": "nvme",
                        "writes": []} for k, u in uses.items()]}  # fmt: skip
    case = parse_case(raw, "case", None)
    assert exact_lower_bound(case) == 24
    assert _refetch_bound(case, [0] * 18 + [1], nvme=True) == 24
    assert greedy_makespan(raw) >= 24


def greedy_makespan(raw: dict[str, Any]) -> Fraction:
    """The greedy planner's plan for `raw`, verified by the judge: its makespan."""
    case = parse_case(raw, "case", None)
    tensors = [(t["id"], t["size"], t["alignment"], t["uses"]) for t in raw["tensors"]]
    plan, leave, rec, offsets, _ = greedy.greedy_plan(raw, tensors, greedy.kinds_of(raw))
    body = greedy.plan_json(tensors, plan, offsets, leave, rec)
    plan = parse_plan(body, "plan", case)
    result = verify(case, plan)
    assert result.verdict == Verdict.OK, result.message
    timing = simulate(case, plan, check(case, plan)[1])  # exact: makespan_us is a float
    return Fraction(timing.makespan, timing.unit)


@st.composite
def cyclic_cases(draw: Any) -> dict[str, Any]:
    n = draw(st.integers(2, 5))
    passes = draw(st.integers(2, 6))
    sizes = [draw(st.integers(1, 8)) for _ in range(n)]
    nvme = draw(st.booleans())  # weights on NVMe, host memory for some of them
    hot = draw(st.integers(0, 2))  # bytes of a state used (and written) in every step
    made = draw(st.integers(0, 3))  # tensors made on the device, used again later
    compress = [draw(st.integers(0, s)) if draw(st.booleans()) else 0 for s in sizes]
    tensors = []
    for i in range(n):
        t: dict[str, Any] = {"id": f"w{i}", "size": sizes[i], "alignment": 1,
                             "start": "nvme" if nvme else "host",
                             "writes": [], "uses": [p * n + i for p in range(passes)]}  # fmt: skip
        if compress[i]:
            t["compress"] = {"size": compress[i], "encode": 1, "decode": 1}
        tensors.append(t)
    steps = n * passes
    if hot:
        tensors.append({"id": "state", "size": hot, "alignment": 1, "uses": list(range(steps))})
    for j in range(made):
        when = draw(st.lists(st.integers(0, steps - 1), min_size=2, max_size=4, unique=True))
        size = draw(st.integers(1, 6))
        tensors.append({"id": f"a{j}", "size": size, "alignment": 1, "uses": sorted(when),
                        "writes": [min(when)]})  # fmt: skip
    per_step = [sum(t["size"] for t in tensors if s in t["uses"]) for s in range(steps)]
    low = max(per_step)
    tiers: dict[str, Any] = {}
    if nvme:
        tiers["host_capacity"] = draw(st.integers(0, sum(sizes) // 2))
        tiers["nvme"] = {"read_bandwidth": draw(st.integers(1, 3)), "write_bandwidth": 1,
                         "read_latency": draw(st.integers(0, 2)), "write_latency": 0}  # fmt: skip
    return {
        **tiers,
        "capacity": draw(st.integers(low, max(low, (max(sizes) + sum(sizes)) // 2 + hot + 6))),
        "h2d_bandwidth": draw(st.integers(1, 3)),
        "d2h_bandwidth": 1,
        "steps": draw(
            st.lists(st.integers(0, 3), min_size=n * passes, max_size=n * passes).filter(any)
        ),
        "tensors": tensors,
    }


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cyclic_cases())
def test_the_capacity_term_never_passes_a_valid_plan(raw) -> None:
    case = parse_case(raw, "case", None)
    bound = exact_lower_bound(case)
    assert bound <= greedy_makespan(raw)
    prefix = [0, *case.steps.cumsum().tolist()]
    SEEN.append(bound in (_refetch_bound(case, prefix), _refetch_bound(case, prefix, nvme=True)))


def test_the_capacity_term_was_the_bound_on_some_cases() -> None:
    """Runs after the property test in file order."""
    if SEEN:
        assert any(SEEN), "the capacity term never decided the bound"
