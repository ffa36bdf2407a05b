"""`offload`: the verifier is exact for every legal value (issue 34, item 5). Times are
integers in units of 1/lcm(bandwidths) µs, and that unit passes int64 for ordinary
bandwidths (250007, 250013, 70001, 40009): nothing may take a fixed-width shortcut
then. The fuzz test scales random valid plans to the documented ranges (sizes up to
2^48, every other number up to 2^62, bandwidths included) and checks the makespan
against the slow Fraction reference (tests/offload_reference.py), and draws its timeline.
OFFLOAD_EXACT_EXAMPLES sets the number of examples (default 150)."""

from __future__ import annotations

import json
import math
import os
from fractions import Fraction
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from judge.cli import app
from judge.types.offload import OFFLOAD
from judge.types.offload.bound import exact_lower_bound, lower_bound
from judge.types.offload.case import parse_case
from judge.types.offload.plan import parse_plan
from judge.types.offload.verifier import simulate, verify
from judge.verdict import Verdict
from tests import offload_reference as ref
from tests.test_offload_v2_reference import valid_pairs

EXAMPLES = int(os.environ.get("OFFLOAD_EXACT_EXAMPLES", "150"))
TOP = 2**62  # the documented largest number (sizes: 2^48)

# The issue's case: no encode, decode or recompute work, lcm of the bandwidths > 2^63.
ISSUE_CASE: dict[str, Any] = {
    "capacity": 64, "h2d_bandwidth": 250007, "d2h_bandwidth": 250013,
    "nvme": {"read_bandwidth": 70001, "write_bandwidth": 40009},
    "steps": [4, 4, 4],
    "tensors": [{"id": "a", "size": 16, "alignment": 8, "uses": [0, 2]},
                {"id": "g", "size": 8, "alignment": 8, "uses": [1], "start": "nvme",
                 "end": "host"}],
}  # fmt: skip
ISSUE_PLAN: dict[str, Any] = {"tensors": [
    {"id": "a", "residencies": [{"offset": 0, "uses": 1, "out": "nvme"},
                                {"offset": 16, "uses": 1, "prefetch_after": 1}]},
    {"id": "g", "residencies": [{"offset": 32, "uses": 1, "prefetch_after": -1}]},
]}  # fmt: skip


def judged(case_raw: dict[str, Any], plan_raw: dict[str, Any]) -> Any:
    case = parse_case(case_raw, "case.json", None)
    return verify(case, parse_plan(plan_raw, "plan.json", case))


def test_a_unit_past_int64_with_no_codec_or_recompute_work_is_exact():
    assert math.lcm(250007, 250013, 70001, 40009) >= 2**63
    result = judged(ISSUE_CASE, ISSUE_PLAN)
    assert result.verdict == Verdict.OK, result.message
    assert Fraction(result.makespan) == Fraction(float(ref.makespan(ISSUE_CASE, ISSUE_PLAN)))


def test_memorace_verify_prints_json_for_it(tmp_path: Path):
    case, plan = tmp_path / "case.json", tmp_path / "plan.json"
    case.write_text(json.dumps(ISSUE_CASE))
    plan.write_text(json.dumps(ISSUE_PLAN))
    run = CliRunner().invoke(app, ["verify", "--type", "offload", str(case), str(plan), "--json"])
    assert run.exit_code == 0, run.output
    result = json.loads(run.stdout)
    assert result["verdict"] == "OK" and result["lower_bound"] >= 12
    assert Fraction(result["makespan"]) == Fraction(float(ref.makespan(ISSUE_CASE, ISSUE_PLAN)))


def test_a_case_without_tensors_and_a_huge_unit():
    """No residency at all: every column is empty, the unit still past int64."""
    raw = {**ISSUE_CASE, "tensors": []}
    result = judged(raw, {"tensors": []})
    assert result.verdict == Verdict.OK and result.makespan == 12


def test_the_timeline_of_a_huge_unit_draws():
    case = parse_case(ISSUE_CASE, "case.json", None)
    plan = parse_plan(ISSUE_PLAN, "plan.json", case)
    assert OFFLOAD.picture(case, plan, 12).startswith("<svg")


# --- the documented ranges ------------------------------------------------------------------------

PRIMES_NEAR_TOP = [TOP - 57, TOP - 87, TOP - 117, TOP - 143]  # 2^62 - k, prime
bandwidths = st.one_of(
    st.integers(1, TOP),
    st.sampled_from([1, 2, TOP, TOP - 1, 250007, 250013, 70001, 40009, *PRIMES_NEAR_TOP]),
    st.integers(1, 2**20),
)


def _times(raw: dict[str, Any], scale: int) -> None:
    """Every duration, cost and latency times `scale` (the steps' sum stays <= 2^62)."""
    raw["steps"] = [d * scale for d in raw["steps"]]
    for key in ("h2d_latency", "d2h_latency"):
        if key in raw:
            raw[key] *= scale
    for key in ("read_latency", "write_latency"):
        if key in raw.get("nvme", {}):
            raw["nvme"][key] *= scale
    for t in raw["tensors"]:
        if "recompute" in t:
            t["recompute"]["cost"] *= scale
        if "compress" in t:
            t["compress"]["encode"] *= scale
            t["compress"]["decode"] *= scale


def _bytes(raw: dict[str, Any], plan: dict[str, Any], scale: int) -> None:
    """Every size, alignment, offset and capacity times `scale`: the same overlaps."""
    raw["capacity"] *= scale
    if "host_capacity" in raw:
        raw["host_capacity"] *= scale
    for t in raw["tensors"]:
        t["size"] *= scale
        t["alignment"] *= scale
        if "compress" in t:
            t["compress"]["size"] *= scale
    for entry in plan["tensors"]:
        for res in entry["residencies"]:
            res["offset"] *= scale
            if "priority" in res:  # the same order, up to 2^62
                res["priority"] *= TOP // 3


@st.composite
def huge_pairs(draw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A random valid plan (every feature), its numbers spread over the documented ranges."""
    case, plan = draw(valid_pairs())
    case["h2d_bandwidth"], case["d2h_bandwidth"] = draw(bandwidths), draw(bandwidths)
    if "nvme" in case:
        case["nvme"]["read_bandwidth"] = draw(bandwidths)
        case["nvme"]["write_bandwidth"] = draw(bandwidths)
    most = TOP // max(4, sum(case["steps"]))  # costs <= 4 and latencies <= 2 before
    _times(case, draw(st.sampled_from([1, most, draw(st.integers(1, most))])))
    most = 2**48 // 16  # sizes <= 12 before
    _bytes(case, plan, draw(st.sampled_from([1, most, draw(st.integers(1, most))])))
    for key in ("h2d_latency", "d2h_latency"):
        if draw(st.integers(0, 4)) == 0:
            case[key] = draw(st.sampled_from([0, TOP]))
    return case, plan


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])  # fmt: skip
@given(huge_pairs())
def test_documented_ranges_are_judged_exactly(pair):
    case_raw, plan_raw = pair
    case = parse_case(case_raw, "case.json", None)
    result = verify(case, parse_plan(plan_raw, "plan.json", case))
    assert result.verdict == Verdict.OK, result.message
    expected = ref.makespan(case_raw, plan_raw)
    assert Fraction(result.makespan) == Fraction(float(expected))
    plan = parse_plan(plan_raw, "plan.json", case)
    timing = simulate(case, plan)
    assert Fraction(timing.end, timing.unit) == expected  # exact, not only as a float
    assert exact_lower_bound(case) <= expected
    assert OFFLOAD.picture(case, plan, lower_bound(case)).startswith("<svg")
