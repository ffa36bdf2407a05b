"""`offload`: the simulator against a slow, obviously correct re-implementation, the
static check against an all-pairs check, and the messages a contestant reads."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from judge.cli import app
from judge.errors import CaseError, PlanError
from judge.types.offload.case import parse_case, read_case
from judge.types.offload.plan import parse_plan, read_plan
from judge.types.offload.verifier import simulate, verify
from judge.verdict import Verdict

# --- random small cases and plans ------------------------------------------------------------


@st.composite
def cases(draw: Any) -> dict[str, Any]:
    n_steps = draw(st.integers(1, 6))
    tensors = []
    for i in range(draw(st.integers(1, 5))):
        uses = sorted(draw(st.sets(st.integers(0, n_steps - 1), min_size=1, max_size=4)))
        align = draw(st.sampled_from([1, 2, 4]))
        tensors.append(
            {"id": f"t{i}", "size": draw(st.integers(1, 12)), "alignment": align, "uses": uses}
        )
    return {
        "capacity": 10**6,  # set from the plan below
        "h2d_bandwidth": draw(st.integers(1, 5)),
        "d2h_bandwidth": draw(st.integers(1, 5)),
        # Steps of 0 µs are kept (they decide queue ties), but not all of them: such a
        # case is refused (every plan would score 0).
        "steps": draw(st.lists(st.integers(0, 9), min_size=n_steps, max_size=n_steps).filter(any)),
        "tensors": tensors,
    }


def residencies(draw: Any, tensor: dict[str, Any]) -> list[dict[str, Any]]:
    """Random split of the uses with a random prefetch step in the legal range."""
    uses = tensor["uses"]
    cuts = (
        sorted(draw(st.sets(st.integers(1, len(uses) - 1), max_size=len(uses) - 1)))
        if len(uses) > 1
        else []
    )
    out, prev = [], 0
    for cut in [*cuts, len(uses)]:
        res: dict[str, Any] = {"offset": 0, "uses": cut - prev}
        if prev:
            res["prefetch_after"] = draw(st.integers(uses[prev - 1], uses[prev] - 1))
        out.append(res)
        prev = cut
    return out


def windows(case: dict[str, Any], plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Every residency with its points (2s during step s, 2s+1 after it), inclusive."""
    rows = []
    for t_index, (tensor, entry) in enumerate(zip(case["tensors"], plan["tensors"], strict=True)):
        covered = 0
        for k, res in enumerate(entry["residencies"]):
            uses = tensor["uses"][covered : covered + res["uses"]]
            covered += res["uses"]
            if "prefetch_after" in res:  # copied in (v2: a first residency may be)
                begin = 2 * res["prefetch_after"] + 1
            else:  # produced, or (v2) recomputed
                begin = 2 * res.get("recompute_before", uses[0])
            rows.append({
                "t": t_index, "k": k, "res": res, "size": tensor["size"], "first": uses[0],
                "last": uses[-1], "begin": begin, "end": 2 * uses[-1],
                "final": k == len(entry["residencies"]) - 1,
            })  # fmt: skip
    return rows


def place_validly(draw: Any, case: dict[str, Any], plan: dict[str, Any]) -> None:
    """Random aligned offsets that never clash (so bytes are reused a lot)."""
    rows = sorted(windows(case, plan), key=lambda w: w["begin"])
    for w in rows:
        align = case["tensors"][w["t"]]["alignment"]
        busy = [
            v
            for v in rows
            if v is not w and "at" in v and v["begin"] <= w["end"] and w["begin"] <= v["end"]
        ]
        free = [
            off for off in range(0, 512, align)
            if all(off + w["size"] <= v["at"] or v["at"] + v["size"] <= off for v in busy)
        ]  # fmt: skip
        w["at"] = w["res"]["offset"] = draw(st.sampled_from(free[:6]))
    case["capacity"] = max(w["at"] + w["size"] for w in rows)


@st.composite
def valid_pairs(draw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    case = draw(cases())
    plan = {
        "tensors": [{"id": t["id"], "residencies": residencies(draw, t)} for t in case["tensors"]]
    }
    place_validly(draw, case, plan)
    _make_feasible(case)
    return case, plan


def _make_feasible(case: dict[str, Any]) -> None:
    need = max(
        sum(t["size"] for t in case["tensors"] if s in t["uses"]) for s in range(len(case["steps"]))
    )
    case["capacity"] = max(case["capacity"], need)


# --- the slow reference -------------------------------------------------------------------------


def slow_makespan(case: dict[str, Any], plan: dict[str, Any]) -> Fraction:
    """Each event's end = max(its dependencies' ends) + its duration, relaxed until nothing
    changes; dependencies read straight off the rules, byte predecessors by all pairs."""
    rows = windows(case, plan)
    h2d, d2h, steps = case["h2d_bandwidth"], case["d2h_bandwidth"], case["steps"]
    outs = sorted((w for w in rows if not w["final"]), key=lambda w: (w["last"], w["t"]))
    ins = sorted(
        (w for w in rows if w["k"] > 0), key=lambda w: (w["res"]["prefetch_after"], w["t"])
    )

    def overlaps(a: dict, b: dict) -> bool:
        lo_a, lo_b = a["res"]["offset"], b["res"]["offset"]
        return lo_a < lo_b + b["size"] and lo_b < lo_a + a["size"]

    def preds(w: dict) -> list[dict]:
        return [v for v in rows if v is not w and v["end"] < w["begin"] and overlaps(v, w)]

    end: dict[Any, Fraction] = {}

    def get(key: Any) -> Fraction:
        return end.get(key, Fraction(0))

    def release(w: dict) -> Fraction:
        return get(("step", w["last"])) if w["final"] else get(("out", id(w)))

    for _ in range(4 * (len(rows) + len(steps)) + 4):
        before = dict(end)
        for s, duration in enumerate(steps):
            deps = [get(("step", s - 1))] if s else [Fraction(0)]
            deps += [get(("in", id(w))) for w in rows if w["k"] > 0 and w["first"] == s]
            deps += [release(v) for w in rows if w["k"] == 0 and w["first"] == s for v in preds(w)]
            end[("step", s)] = max(deps) + duration
        for i, w in enumerate(outs):
            deps = [get(("step", w["last"]))] + ([get(("out", id(outs[i - 1])))] if i else [])
            end[("out", id(w))] = max(deps) + Fraction(w["size"], d2h)
        for i, w in enumerate(ins):
            prev = next(v for v in rows if v["t"] == w["t"] and v["k"] == w["k"] - 1)
            deps = [get(("step", w["res"]["prefetch_after"])), get(("out", id(prev)))]
            deps += ([get(("in", id(ins[i - 1])))] if i else []) + [release(v) for v in preds(w)]
            end[("in", id(w))] = max(deps) + Fraction(w["size"], h2d)
        if end == before:
            break
    return get(("step", len(steps) - 1))


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_pairs())
def test_simulated_makespan_equals_the_slow_reference(pair):
    case_raw, plan_raw = pair
    case = parse_case(case_raw, "case", None)
    plan = parse_plan(plan_raw, "plan", case)
    result = verify(case, plan)
    assert result.verdict == Verdict.OK, result.message
    assert Fraction(result.makespan).limit_denominator(10**6) == slow_makespan(case_raw, plan_raw)


@st.composite
def any_pairs(draw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    case = draw(cases())
    plan = {
        "tensors": [{"id": t["id"], "residencies": residencies(draw, t)} for t in case["tensors"]]
    }
    for entry in plan["tensors"]:
        for res in entry["residencies"]:
            res["offset"] = draw(st.integers(0, 24))
    case["capacity"] = draw(st.integers(8, 40))
    case["tensors"] = [dict(t, size=min(t["size"], 8)) for t in case["tensors"]]
    _make_feasible(case)
    return case, plan


def all_pairs_problem(case: dict[str, Any], plan: dict[str, Any]) -> str | None:
    rows = windows(case, plan)
    for w in rows:
        t = case["tensors"][w["t"]]
        if w["res"]["offset"] % t["alignment"]:
            return "alignment"
        if w["res"]["offset"] + w["size"] > case["capacity"]:
            return "capacity"
    for i, a in enumerate(rows):
        for b in rows[i + 1 :]:
            lo_a, lo_b = a["res"]["offset"], b["res"]["offset"]
            share_bytes = lo_a < lo_b + b["size"] and lo_b < lo_a + a["size"]
            if share_bytes and a["begin"] <= b["end"] and b["begin"] <= a["end"]:
                return "overlap"
    return None


@settings(max_examples=1000, deadline=None)
@given(any_pairs())
def test_static_check_agrees_with_all_pairs(pair):
    case_raw, plan_raw = pair
    case = parse_case(case_raw, "case", None)
    result = verify(case, parse_plan(plan_raw, "plan", case))
    expected = all_pairs_problem(case_raw, plan_raw)
    assert (result.verdict == Verdict.OK) == (expected is None), (result.message, expected)
    if expected == "overlap" and result.verdict != Verdict.OK and "overlap" in result.message:
        assert "bytes [" in result.message


# --- messages ---------------------------------------------------------------------------------

CASE = {
    "capacity": 16, "h2d_bandwidth": 2, "d2h_bandwidth": 4, "steps": [10, 10, 10, 10],
    "tensors": [
        {"id": "a", "size": 8, "alignment": 8, "uses": [0, 3]},
        {"id": "b", "size": 8, "alignment": 8, "uses": [1]},
        {"id": "c", "size": 16, "alignment": 8, "uses": [2]},
    ],
}  # fmt: skip
GOOD = {"tensors": [
    {"id": "a", "residencies": [{"offset": 0, "uses": 1}, {"offset": 8, "uses": 1, "prefetch_after": 2}]},
    {"id": "b", "residencies": [{"offset": 8, "uses": 1}]},
    {"id": "c", "residencies": [{"offset": 0, "uses": 1}]},
]}  # fmt: skip


def check(plan: dict[str, Any]) -> Any:
    case = parse_case(CASE, "case", 16)
    return verify(case, parse_plan(plan, "plan.json", case))


def test_worked_example_timeline():
    """a leaves after step 0 (8 B at 4 B/µs: 2 µs), c waits for b's bytes, a comes back
    after step 2 (8 B at 2 B/µs: 4 µs), so step 3 starts 4 µs late: 44 µs in all."""
    result = check(GOOD)
    assert result.verdict == Verdict.OK and result.makespan == 44.0 and result.peak == 16
    assert "before step 3" in result.message and "copy-in of residency 2 of a" in result.message


def with_residency(tensor: int, k: int, **changes: Any) -> dict[str, Any]:
    plan = json.loads(json.dumps(GOOD))
    plan["tensors"][tensor]["residencies"][k].update(changes)
    return plan


@pytest.mark.parametrize(
    ("plan", "words"),
    [
        (with_residency(0, 1, prefetch_after=3), "residency 2 of a starts its copy-in after step 3, not before its first use at step 3"),
        (with_residency(0, 1, offset=4), "residency 2 of a has offset 4, which is not a multiple of its alignment 8"),
        (with_residency(0, 1, offset=16), "residency 2 of a occupies bytes [16, 24), past the capacity 16"),
        (with_residency(0, 1, prefetch_after=1), "residency 2 of a and residency 1 of c overlap during step 2 in bytes [8, 16)"),
        (with_residency(0, 0, uses=2), "the residencies of a cover 3 uses, but it has 2"),
    ],
)  # fmt: skip
def test_rule_messages(plan, words):
    result = check(plan)
    assert result.verdict == Verdict.INVALID_PLAN and words in result.message, result.message


def test_copy_in_before_the_previous_residency_ends_is_named():
    case_raw = dict(
        CASE,
        tensors=[{"id": "t17", "size": 8, "alignment": 8, "uses": [0, 52, 60]}],
        steps=[1] * 61,
    )
    plan = {"tensors": [{"id": "t17", "residencies": [
        {"offset": 0, "uses": 1}, {"offset": 0, "uses": 1, "prefetch_after": 40},
        {"offset": 8, "uses": 1, "prefetch_after": 40}]}]}  # fmt: skip
    case = parse_case(case_raw, "case", 16)
    result = verify(case, parse_plan(plan, "plan", case))
    assert (
        result.message
        == "residency 3 of t17 starts its copy-in after step 40 but its previous residency ends at step 52"
    )


@pytest.mark.parametrize(
    ("plan", "words"),
    [
        ([], "a plan is one JSON object"),
        ({"tensors": [{"id": "zz", "residencies": []}]}, "unknown tensor id"),
        ({"tensors": GOOD["tensors"][:2]}, "tensor c missing from the plan"),
        ({"tensors": [*GOOD["tensors"], GOOD["tensors"][0]]}, "tensor a appears twice"),
        ({"tensors": [{"id": "a", "residencies": [{"offset": -1, "uses": 2}]}, *GOOD["tensors"][1:]]}, "offset must be an integer"),
        ({"tensors": [{"id": "a", "residencies": [{"offset": 0, "uses": 1}, {"offset": 0, "uses": 1}]}, *GOOD["tensors"][1:]]}, "needs prefetch_after"),
        ({"tensors": [{"id": "a", "residencies": [{"offset": 0, "uses": 2, "prefetch_after": 0}]}, *GOOD["tensors"][1:]]}, "first residency has no prefetch_after"),
    ],
)  # fmt: skip
def test_unreadable_plans_are_bad_output(plan, words):
    case = parse_case(CASE, "case", 16)
    with pytest.raises(PlanError, match=words):
        parse_plan(plan, "plan.json", case)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"capacity": 15}, "infeasible: step 2 uses tensors of 16 bytes"),
        ({"steps": [1, -1, 1, 1]}, "steps[1] must be an integer"),
        ({"tensors": [{"id": "a", "size": 8, "alignment": 8, "uses": [3, 0]}]}, "sorted, distinct"),
        ({"tensors": [{"id": "a", "size": 8, "alignment": 8, "uses": [9]}]}, "steps in 0..3"),
        ({"tensors": [{"id": "a b", "size": 8, "alignment": 8, "uses": [0]}]}, "id must match"),
        ({"h2d_bandwidth": 0}, "h2d_bandwidth must be an integer from 1"),
        ({"steps": [0, 0, 0, 0]}, "the steps last 0 µs in all: at least one step must take time"),
        (
            {"steps": [2**62, 2**62, 1, 1]},
            "the steps last 9223372036854775810 µs in all; at most 2^62",
        ),
        (
            {"capacity": 10**5000},
            "capacity must be an integer from 0 to 2^62, not <a 5001-digit integer>",
        ),
    ],
)
def test_bad_cases_are_named(change, words):
    with pytest.raises(CaseError, match=re.escape(words)):
        parse_case({**CASE, **change}, "case.json", None)


def test_case_capacity_must_match_the_package(tmp_path: Path):
    with pytest.raises(CaseError, match="differs from the package's capacity 32"):
        parse_case(CASE, "case.json", 32)


def test_copies_issued_at_the_same_moment_queue_by_step_then_tensor():
    """Step 1 lasts 0 µs, so b's copy-out (issued after step 0) and a's (after step 1)
    are issued at the same moment, 1 µs: b goes first although a comes first in the
    case (README, "Timing"). In tensor order the makespan would be 16 µs, not 18."""
    case_raw = {
        "capacity": 16,
        "h2d_bandwidth": 1,
        "d2h_bandwidth": 1,
        "steps": [1, 0, 5],
        "tensors": [
            {"id": "a", "size": 4, "alignment": 1, "uses": [1, 2]},
            {"id": "b", "size": 2, "alignment": 1, "uses": [0, 2]},
        ],
    }
    plan_raw = {"tensors": [
        {"id": "a", "residencies": [{"offset": 0, "uses": 1}, {"offset": 8, "uses": 1, "prefetch_after": 1}]},
        {"id": "b", "residencies": [{"offset": 4, "uses": 1}, {"offset": 12, "uses": 1, "prefetch_after": 1}]},
    ]}  # fmt: skip
    case = parse_case(case_raw, "case", None)
    plan = parse_plan(plan_raw, "plan", case)
    timing = simulate(case, plan)
    outs = [(case.ids[int(plan.tensor[r])], b, e) for eng, r, b, e in timing.copies if eng == "d2h"]
    assert outs == [("b", 1, 3), ("a", 3, 7)]
    assert verify(case, plan).makespan == 18.0
    assert slow_makespan(case_raw, plan_raw) == 18


def test_huge_and_deep_json_is_a_plan_error(tmp_path: Path):
    case = parse_case(CASE, "case", 16)
    for name, text in {
        "huge": '{"tensors": [{"id": "a", "residencies": [{"offset": 1'
        + "0" * 5000
        + ', "uses": 2}]}]}',
        "deep": "[" * 60_000 + "]" * 60_000,
        "deep_obj": '{"a":' * 60_000 + "1" + "}" * 60_000,
    }.items():
        path = tmp_path / f"{name}.json"
        path.write_text(text)
        with pytest.raises(PlanError) as err:
            read_plan(path, case)
        words = "more than 4,300 digits" if name == "huge" else "nested too deeply"
        assert words in str(err.value)
        case_path = tmp_path / f"{name}-case.json"
        case_path.write_text(text)
        with pytest.raises(CaseError):
            read_case(case_path, None)


def test_cli_verify_takes_the_capacity_from_the_case_file(tmp_path: Path):
    case, plan = tmp_path / "case.json", tmp_path / "plan.json"
    case.write_text(json.dumps(CASE))
    plan.write_text(json.dumps(GOOD))
    run = CliRunner().invoke(app, ["verify", "--type", "offload", str(case), str(plan), "--json"])
    assert run.exit_code == 0, run.output
    result = json.loads(run.stdout)
    assert result["verdict"] == "OK" and result["capacity"] == 16 and result["lower_bound"] == 40
    plan.write_text(json.dumps({"tensors": []}))
    run = CliRunner().invoke(app, ["verify", "--type", "offload", str(case), str(plan)])
    assert run.exit_code == 1 and "BAD_OUTPUT" in run.stdout and "None" not in run.stdout


def test_use_counts_near_2_to_the_62_are_summed_exactly():
    plan = with_residency(0, 0, uses=2**62)
    plan["tensors"][0]["residencies"][1]["uses"] = 2**62 - 1
    result = check(plan)  # float64 would say 2^63
    assert result.message == f"the residencies of a cover {2**63 - 1} uses, but it has 2"


def test_a_hostile_plan_is_bad_output_not_a_judge_error(tmp_path: Path):
    """What the pipeline and the worker call: a verdict with a message, never a traceback
    (a traceback would be retried as JUDGE_ERROR, rerunning the planner)."""
    from judge.types import get_type
    from judge.verifier import check_plan

    ptype = get_type("offload")
    case = parse_case(CASE, "case", 16)
    plan = tmp_path / "plan.json"
    for text in ('{"tensors": [' + "9" * 5000 + "]}", "[" * 60_000):
        plan.write_text(text)
        verification, score = check_plan(ptype, case, ptype.lower_bound(case), plan)
        assert verification.verdict == Verdict.BAD_OUTPUT and score == 0.0
        assert verification.message.startswith("plan.json: ")
