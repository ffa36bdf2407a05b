# ruff: noqa: E501  (tables of plan and expected message: one row per line)
"""`offload` v2: the README's worked example through `memorace verify`, the new rules'
messages, zero-duration steps and ties, and the lower bound."""

from __future__ import annotations

import copy
import json
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from judge.cli import app
from judge.errors import CaseError, PlanError
from judge.types.offload.case import parse_case
from judge.types.offload.plan import parse_plan
from judge.types.offload.verifier import exact_lower_bound, lower_bound, simulate, verify
from judge.verdict import Verdict

README = Path(__file__).resolve().parents[1] / "judge/types/offload/README.md"


def worked_example() -> tuple[dict[str, Any], dict[str, Any]]:
    text = README.read_text().split("## Worked example", 1)[1]
    blocks = re.findall(r"```json\n(.*?)```", text, re.S)
    return json.loads(blocks[0]), json.loads(blocks[1])


EXAMPLE_CASE, EXAMPLE_PLAN = worked_example()


def test_the_worked_example_gives_the_documented_makespan(tmp_path: Path):
    case, plan = tmp_path / "case.json", tmp_path / "plan.json"
    case.write_text(json.dumps(EXAMPLE_CASE))
    plan.write_text(json.dumps(EXAMPLE_PLAN))
    run = CliRunner().invoke(app, ["verify", "--type", "offload", str(case), str(plan), "--json"])
    assert run.exit_code == 0, run.output
    result = json.loads(run.stdout)
    assert result["verdict"] == "OK" and result["makespan"] == 41.0 and result["peak"] == 64
    assert result["lower_bound"] == 20 and result["score"] == pytest.approx(20 / 41)
    assert (
        "9.000 µs before step 3: waiting for the copy-in of residency 2 of m" in result["message"]
    )


def test_the_worked_example_uses_every_feature_and_its_table():
    c = parse_case(EXAMPLE_CASE, "case", None)
    p = parse_plan(EXAMPLE_PLAN, "plan", c)
    t = simulate(c, p)
    got = {(e, c.ids[int(p.tensor[r])], int(p.index[r]) + 1): (Fraction(b, t.unit), Fraction(z, t.unit))
           for e, r, b, z in t.copies + t.work}  # fmt: skip
    assert got == {
        ("h2d", "w", 1): (0, 5), ("encode", "k", 1): (9, 10), ("d2h", "k", 1): (10, 12),
        ("nvme_read", "g", 1): (9, 14), ("h2d", "k", 2): (12, 14), ("h2d", "g", 1): (14, 17),
        ("decode", "k", 2): (21, 22), ("h2d", "w", 2): (21, 26), ("d2h", "m", 1): (21, 24),
        ("nvme_write", "m", 1): (24, 29), ("d2h", "g", 1): (26, 29),
        ("recompute", "a", 2): (26, 28), ("nvme_read", "m", 2): (29, 34), ("h2d", "m", 2): (34, 37),
    }  # fmt: skip
    assert [Fraction(s, t.unit) for s in t.step_start] == [5, 17, 22, 37]
    assert exact_lower_bound(c) == 20


def example_with(tensor: str, k: int, **changes: Any) -> dict[str, Any]:
    plan = copy.deepcopy(EXAMPLE_PLAN)
    entry = next(e for e in plan["tensors"] if e["id"] == tensor)
    res = entry["residencies"][k]
    for key, value in changes.items():
        if value is None:
            res.pop(key, None)
        else:
            res[key] = value
    return plan


def k_parked_in_full() -> dict[str, Any]:
    plan = example_with("k", 1, decode_before=None)
    plan["tensors"][3]["residencies"][0]["out"] = "copy"
    return plan


def check(plan: dict[str, Any], case: dict[str, Any] | None = None) -> Any:
    c = parse_case(case or EXAMPLE_CASE, "case", None)
    return verify(c, parse_plan(plan, "plan.json", c))


@pytest.mark.parametrize(
    ("plan", "words"),
    [
        (example_with("g", 0, prefetch_after=1), "residency 1 of g starts its copy-in after step 1, not before its first use at step 1"),
        (example_with("k", 0, out="drop"), "residency 1 of k is dropped after step 0, but it was produced on the device"),
        (example_with("a", 1, recompute_before=0), "residency 2 of a is recomputed before step 0, which must come after its previous residency's last use at step 0"),
        (example_with("a", 1, recompute_before=1), "residency 2 of a is recomputed before step 1 from w, but no residency of w holds all its bytes both after step 0 and during step 1"),
        (example_with("k", 1, decode_before=0), "residency 2 of k is decoded before step 0, which must come after its copy-in (after step 0)"),
        (example_with("w", 1, decode_before=3), "residency 2 of w has decode_before, but its copy-in is not compressed"),
        (example_with("m", 0, out="compressed"), "residency 1 of m is parked compressed, but m is not compressible"),
        (example_with("g", 0, out="copy"), "residency 1 of g is the last residency of g but has out"),
        (example_with("k", 1, offset=40), "residency 2 of w and residency 2 of k overlap during step 2 in bytes [40, 48)"),
        (k_parked_in_full(), "host memory holds 32 bytes after step 0 (w, k), more than the host capacity 24"),
    ],
)  # fmt: skip
def test_v2_rule_messages(plan, words):
    result = check(plan)
    assert result.verdict == Verdict.INVALID_PLAN and words in result.message, result.message


def test_compressed_bytes_only_hold_the_tail_until_the_decode():
    """k's second residency holds only [60, 64) until its decode before step 2: another
    residency may use [48, 60) during step 1 (README, "Static validity")."""
    case = copy.deepcopy(EXAMPLE_CASE)
    case["tensors"].append({"id": "x", "size": 8, "alignment": 8, "uses": [1]})
    plan = copy.deepcopy(EXAMPLE_PLAN)
    plan["tensors"].append({"id": "x", "residencies": [{"offset": 48, "uses": 1}]})
    assert check(plan, case).verdict == Verdict.OK
    plan["tensors"][-1]["residencies"][0]["offset"] = 56
    assert "overlap during step 1 in bytes [60, 64)" in check(plan, case).message


@pytest.mark.parametrize(
    ("plan", "words"),
    [
        (example_with("w", 0, prefetch_after=None), "residency 1 of w needs prefetch_after"),
        (example_with("a", 0, prefetch_after=0), "residency 1 of a has prefetch_after, which it does not take (the first residency"),
        (example_with("a", 1, prefetch_after=1), "residency 2 of a has prefetch_after, which it does not take (a recomputed"),
        (example_with("a", 1, recompute_before=None), "residency 2 of a needs recompute_before"),
        (example_with("k", 0, out="tape"), "out must be one of copy, compressed, nvme, drop"),
        (example_with("k", 1, prefetch_after=-2), "prefetch_after must be an integer from -1"),
        (example_with("k", 1, priority=-1), "priority must be an integer from 0"),
        (example_with("k", 1, **{"in": "magic"}), 'in must be "copy" or "recompute"'),
    ],
)  # fmt: skip
def test_v2_unreadable_plans_are_bad_output(plan, words):
    case = parse_case(EXAMPLE_CASE, "case", None)
    with pytest.raises(PlanError, match=re.escape(words)):
        parse_plan(plan, "plan.json", case)


def with_tensor(k: int, **changes: Any) -> dict[str, Any]:
    case = copy.deepcopy(EXAMPLE_CASE)
    case["tensors"][k].update(changes)
    return case


@pytest.mark.parametrize(
    ("case", "words"),
    [
        (with_tensor(0, writes=[1]), "tensor w: writes must be some of its uses [0, 3]"),
        (with_tensor(0, start="disk"), "tensor w: start must be one of device, host, nvme"),
        (with_tensor(0, end="nvme"), "tensor w: end must be one of none, host, device"),
        (with_tensor(1, writes=[0, 3]), "tensor a is recomputable, so it must start on the device and be written only by its first use"),
        (with_tensor(1, recompute={"cost": 1, "from": ["zz"]}), "recompute from unknown tensor"),
        (with_tensor(3, compress={"size": 17, "encode": 1, "decode": 1}), "tensor k: compressed size must be an integer from 1 to its size 16, not 17"),
        ({**EXAMPLE_CASE, "nvme": None}, "tensor g starts on nvme, but the case has no nvme tier"),
        ({**EXAMPLE_CASE, "host_capacity": 23}, "the tensors that end on the host hold 24 bytes after the last step, more than the host capacity 23"),
        ({**EXAMPLE_CASE, "capacity": 40}, "infeasible: step 0 uses tensors of 48 bytes in all, more than the capacity 40"),
        ({**EXAMPLE_CASE, "nvme": {"read_bandwidth": 0, "write_bandwidth": 1}}, "nvme.read_bandwidth must be an integer from 1"),
    ],
)  # fmt: skip
def test_v2_bad_cases_are_named(case, words):
    if case.get("nvme", 1) is None:
        case = {k: v for k, v in case.items() if k != "nvme"}
    with pytest.raises(CaseError, match=re.escape(words)):
        parse_case(case, "case.json", None)


def test_a_device_end_tensor_counts_in_every_later_step():
    case = {"capacity": 16, "h2d_bandwidth": 1, "d2h_bandwidth": 1, "steps": [1, 1],
            "tensors": [{"id": "a", "size": 10, "alignment": 1, "uses": [0], "end": "device"},
                        {"id": "b", "size": 10, "alignment": 1, "uses": [1]}]}  # fmt: skip
    with pytest.raises(
        CaseError, match="step 1 uses tensors of 20 bytes in all, more than the capacity 16 \\(with"
    ):
        parse_case(case, "case.json", None)


# --- zero-duration steps, all-zero steps, ties ----------------------------------------------------

TIE_CASE = {
    "capacity": 16, "h2d_bandwidth": 1, "d2h_bandwidth": 1, "steps": [5, 0, 5],
    "tensors": [
        {"id": "a", "size": 4, "alignment": 1, "uses": [1, 2], "start": "host", "writes": []},
        {"id": "b", "size": 2, "alignment": 1, "uses": [0, 2]},
    ],
}  # fmt: skip


def tie_plan(prio_a: int = 0, prio_b: int = 0, after_b: int = 1) -> dict[str, Any]:
    return {"tensors": [
        {"id": "a", "residencies": [{"offset": 0, "uses": 1, "prefetch_after": -1, "out": "drop"},
                                    {"offset": 8, "uses": 1, "prefetch_after": 1, "priority": prio_a}]},
        {"id": "b", "residencies": [{"offset": 4, "uses": 1},
                                    {"offset": 12, "uses": 1, "prefetch_after": after_b, "priority": prio_b}]},
    ]}  # fmt: skip


def h2d(plan: dict[str, Any], case: dict[str, Any] = TIE_CASE) -> list[tuple[str, int, int]]:
    c = parse_case(case, "case", None)
    p = parse_plan(plan, "plan", c)
    t = simulate(c, p)
    return [(c.ids[int(p.tensor[r])], b // t.unit, e // t.unit) for eng, r, b, e in t.copies
            if eng == "h2d"]  # fmt: skip


def test_ties_at_one_point_go_by_priority_then_plan_order():
    """a's and b's second copy-ins are both issued after step 1 (at 5 µs; b's waits for
    b's copy-out until 7): plan order puts a first, priority b first, and then a waits
    behind it (one engine, first in first out) (README, "Edge cases")."""
    assert h2d(tie_plan())[1:] == [("a", 5, 9), ("b", 9, 11)]
    assert h2d(tie_plan(prio_b=1))[1:] == [("b", 7, 9), ("a", 9, 13)]
    assert h2d(tie_plan(prio_a=3, prio_b=1))[1:] == [("a", 5, 9), ("b", 9, 11)]


def test_after_a_zero_step_copies_queue_behind_the_step_before():
    """Step 1 lasts 0 µs, so b's copy-in named after step 0 and a's named after step 1
    are issued at the same moment (5 µs): b's queues first whatever the priorities."""
    assert h2d(tie_plan(prio_a=9, after_b=0))[1:] == [("b", 7, 9), ("a", 9, 13)]


def test_zero_duration_steps_and_an_all_zero_list():
    c = parse_case({**TIE_CASE, "steps": [0, 0, 1]}, "case", None)
    assert exact_lower_bound(c) == 4 + 1  # a crosses h2d (4 µs), then steps 1.. (1 µs)
    with pytest.raises(CaseError, match="the steps last 0 µs in all"):
        parse_case({**TIE_CASE, "steps": [0, 0, 0], "tensors": TIE_CASE["tensors"][1:]}, "c", None)
    forced = parse_case({**TIE_CASE, "steps": [0, 0, 0]}, "case", None)
    assert lower_bound(forced) == 4  # all steps 0 µs, but a's copy-in is forced
    result = verify(forced, parse_plan(tie_plan(), "plan", forced))
    # a 0-4, steps 0 and 1 at 0 and 4; b's copy-out 0-2; a again 4-8, b 8-10; step 2 at 10
    assert result.verdict == Verdict.OK and result.makespan == 10.0


def test_the_bound_is_floored_and_link_aware():
    case = {"capacity": 8, "h2d_bandwidth": 3, "d2h_bandwidth": 2, "d2h_latency": 1,
            "steps": [1, 1], "tensors": [
                {"id": "w", "size": 4, "alignment": 1, "uses": [0], "start": "host"},
                {"id": "g", "size": 5, "alignment": 1, "uses": [1], "end": "host"}]}  # fmt: skip
    c = parse_case(case, "case", None)
    # h2d: 4/3 + 2 steps; d2h: g written in step 1, ends at 2, then 1 + 5/2
    assert exact_lower_bound(c) == Fraction(11, 2) and lower_bound(c) == 5


def test_the_timeline_draws_codec_and_recompute_work():
    from judge.types.offload import OFFLOAD

    c = parse_case(EXAMPLE_CASE, "case", None)
    picture = OFFLOAD.picture(c, parse_plan(EXAMPLE_PLAN, "plan", c), lower_bound(c))
    assert 'class="work"' in picture and "decode of residency 2 of k" in picture
    assert "recompute of residency 2 of a" in picture
    assert "waiting for the copy-in of residency 2 of m" in picture  # the stall before step 3


def test_the_planner_input_keeps_every_v2_field():
    """What a planner reads (case.as_json) is the case: read back, same makespan."""
    c = parse_case(EXAMPLE_CASE, "case", None)
    again = parse_case(json.loads(json.dumps(c.as_json())), "case.json", None)
    assert again.as_json() == c.as_json()
    plan = parse_plan(EXAMPLE_PLAN, "plan", again)
    assert verify(again, plan).makespan == 41.0
    v1 = parse_case(
        {
            k: v
            for k, v in EXAMPLE_CASE.items()
            if k not in ("nvme", "host_capacity", "h2d_latency", "d2h_latency")
        }
        | {
            "tensors": [
                {k: v for k, v in t.items() if k in ("id", "size", "alignment", "uses")}
                for t in EXAMPLE_CASE["tensors"]
            ]
        },
        "c",
        None,
    )
    assert set(v1.as_json()) == {"capacity", "h2d_bandwidth", "d2h_bandwidth", "steps", "tensors"}
    assert all(set(t) == {"id", "size", "alignment", "uses"} for t in v1.as_json()["tensors"])
