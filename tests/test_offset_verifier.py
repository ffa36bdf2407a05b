"""The exact verifier against an obviously correct all-pairs check."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from judge.cli import app
from judge.errors import CaseError
from judge.types.offset.case import OffsetCase, parse_case_bytes
from judge.types.offset.plan import OffsetPlan
from judge.types.offset.verifier import lower_bound, verify
from judge.verdict import Verdict


def all_pairs(case_rows, offsets, capacity):
    """(kind, detail) of the first broken rule by brute force, or None."""
    for (bid, _, _, _, align), off in zip(case_rows, offsets, strict=True):
        if off % align:
            return "alignment", {bid}
    for (bid, _, _, size, _), off in zip(case_rows, offsets, strict=True):
        if off + size > capacity:
            return "capacity", {bid}
    pairs = []
    for i, (a, la, ua, sa, _) in enumerate(case_rows):
        for j, (b, lb, ub, sb, _) in enumerate(case_rows[:i]):
            if (
                la < ub
                and lb < ua
                and offsets[i] < offsets[j] + sb
                and offsets[j] < offsets[i] + sa
            ):
                pairs.append((max(la, lb), {a, b}))
    if pairs:
        return "overlap", pairs
    return None


def brute_lower_bound(case_rows):
    times = {lo for _, lo, _, _, _ in case_rows}
    return max((sum(s for _, lo, up, s, _ in case_rows if lo <= t < up) for t in times), default=0)


@st.composite
def cases_and_plans(draw):
    n = draw(st.integers(0, 9))
    rows = []
    for i in range(n):
        lo = draw(st.integers(0, 12))
        up = lo + draw(st.integers(1, 6))
        rows.append((f"b{i}", lo, up, draw(st.integers(1, 9)), draw(st.sampled_from([1, 1, 2, 4]))))
    capacity = draw(st.integers(0, 48))
    offsets = [
        draw(st.one_of(st.integers(0, 40), st.integers(0, 10).map(lambda k: 4 * k))) for _ in rows
    ]
    return rows, offsets, capacity


def build(rows, offsets, capacity):
    text = "id,lower,upper,size,alignment\n" + "".join(
        f"{b},{lo},{up},{s},{a}\n" for b, lo, up, s, a in rows
    )
    case = parse_case_bytes(text.encode(), "case.csv", capacity)
    return case, OffsetPlan(np.array(offsets, dtype=np.int64))


def random_case_and_plan(rng: random.Random):
    """The family cases_and_plans draws from, drawn by plain random: thousands a second."""
    rows = []
    for i in range(rng.randint(0, 9)):
        lo = rng.randint(0, 12)
        up = lo + rng.randint(1, 6)
        rows.append((f"b{i}", lo, up, rng.randint(1, 9), rng.choice([1, 1, 2, 4])))
    capacity = rng.randint(0, 48)
    offsets = [rng.randint(0, 40) if rng.random() < 0.5 else 4 * rng.randint(0, 10) for _ in rows]
    return rows, offsets, capacity


# Hypothesis (edges first, shrinking) spends most of its time drawing; the seeded sweep
# below covers the breadth the 10,000 examples this used to take gave, in a second.
@settings(max_examples=1_500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases_and_plans())
def test_verifier_agrees_with_all_pairs(data):
    check_against_all_pairs(*data)


@pytest.mark.parametrize("seed", range(4))
def test_verifier_agrees_with_all_pairs_on_a_seeded_sweep(seed):
    rng = random.Random(seed)
    for _ in range(5_000):
        check_against_all_pairs(*random_case_and_plan(rng))


def check_against_all_pairs(rows, offsets, capacity):
    case, plan = build(rows, offsets, capacity)
    got = verify(case, plan)
    want = all_pairs(rows, offsets, capacity)
    assert got.peak == max((o + r[3] for o, r in zip(offsets, rows, strict=True)), default=0)
    assert lower_bound(case) == brute_lower_bound(rows)
    if want is None:
        assert got.verdict == Verdict.OK, got.message
        return
    assert got.verdict == Verdict.INVALID_PLAN
    kind, detail = want
    if kind == "overlap":
        earliest = min(t for t, _ in detail)
        found = re.match(r"buffers (\S+) and (\S+) overlap at time (\d+) in bytes", got.message)
        assert found, got.message
        # The pair it names really overlaps, at the earliest time any pair does.
        assert (int(found[3]), {found[1], found[2]}) in detail, (got.message, detail)
        assert int(found[3]) == earliest
    else:
        assert kind in got.message or "multiple of its alignment" in got.message
        assert detail <= set(got.message.split())


def test_touching_lifespans_may_share_bytes():
    case, plan = build([("a", 0, 5, 8, 1), ("b", 5, 9, 8, 1)], [0, 0], 8)
    assert verify(case, plan).verdict == Verdict.OK


def test_overlap_message_names_buffers_time_and_bytes():
    rows = [("b17", 0, 50, 8192, 1), ("b203", 40, 60, 4096, 1)]
    case, plan = build(rows, [0, 4096], 1 << 20)
    v = verify(case, plan)
    assert v.message == "buffers b17 and b203 overlap at time 40 in bytes [4096, 8192)"


def test_capacity_edge_is_inclusive():
    case, plan = build([("a", 0, 1, 8, 4)], [4], 12)
    assert verify(case, plan).verdict == Verdict.OK
    case, plan = build([("a", 0, 1, 8, 4)], [8], 12)
    assert "past the capacity 12" in verify(case, plan).message


def test_sizes_past_2_to_the_32_are_exact():
    big = 3 * 2**40 + 1
    rows = [("x", 0, 2, big, 1), ("y", 1, 3, big, 1)]
    case, plan = build(rows, [0, big], 2 * big)
    assert verify(case, plan).verdict == Verdict.OK
    assert lower_bound(case) == 2 * big
    case, plan = build(rows, [0, big - 1], 2 * big)
    assert f"in bytes [{big - 1}, {big})" in verify(case, plan).message


def test_empty_case_is_fine():
    case = OffsetCase([], *(np.zeros(0, np.int64) for _ in range(4)), capacity=0)
    assert verify(case, OffsetPlan(np.zeros(0, np.int64))).verdict == Verdict.OK


BIG = 2**62


def test_peak_and_message_past_int64_are_exact():
    """offset 2^62 + size 2^62 = 2^63 used to wrap to -2^63 (issue 9)."""
    case, plan = build([("a", 0, 2, BIG, 1)], [BIG], BIG)
    got = verify(case, plan)
    assert got.peak == 2**63
    assert got.message == f"buffer a occupies bytes [{BIG}, {2**63}), past the capacity {BIG}"


def test_lower_bound_past_int64_is_exact():
    case, _ = build([(f"b{i}", 0, 2, BIG, 1) for i in range(4)], [0] * 4, BIG)
    assert lower_bound(case) == 2**64


huge_values = st.sampled_from([0, 1, 2**61, BIG - 1, BIG]) | st.integers(0, BIG)


@st.composite
def huge_cases_and_plans(draw):
    n = draw(st.integers(1, 5))
    rows = []
    for i in range(n):
        lo = draw(st.sampled_from([0, 1, BIG - 1]))
        rows.append((f"b{i}", lo, lo + 1, max(1, draw(huge_values)), 1))
    offsets = [draw(huge_values) for _ in rows]
    return rows, offsets, draw(huge_values)


@settings(max_examples=1_000, deadline=None)
@given(huge_cases_and_plans())
def test_values_near_2_to_the_62_agree_with_exact_ints(data):
    rows, offsets, capacity = data
    case, plan = build(rows, offsets, capacity)
    got = verify(case, plan)
    assert got.peak == max(o + r[3] for o, r in zip(offsets, rows, strict=True))
    assert lower_bound(case) == brute_lower_bound(rows)
    assert (got.verdict == Verdict.OK) == (all_pairs(rows, offsets, capacity) is None)
    for number in re.findall(r"-?\d+", got.message):
        assert int(number) >= 0


# --- `memorace verify` -----------------------------------------------------------------------


def run_verify(*args: str) -> Any:
    return CliRunner().invoke(app, ["verify", *args])


def test_verify_json_on_a_bad_case_prints_one_json_object(tmp_path):
    case = tmp_path / "case.csv"
    case.write_text("id,lower,upper,size\nb,3,1,4\n")
    run = run_verify(str(case), str(case), "--json")
    assert run.exit_code == 2
    result = json.loads(run.stdout)
    assert result["verdict"] is None and "empty lifespan" in result["error"]
    run = run_verify(str(case), str(case), "--json", "--type", "nope")
    assert run.exit_code == 2 and "unknown problem type" in json.loads(run.stdout)["error"]


def test_verify_text_never_prints_peak_none(tmp_path):
    case, plan = tmp_path / "case.csv", tmp_path / "plan.csv"
    case.write_text("id,lower,upper,size\nb,0,1,4\n")
    plan.write_text("id,offset\nb,x\n")
    run = run_verify(str(case), str(plan), "--capacity", "8")
    assert run.exit_code == 1 and "BAD_OUTPUT" in run.stdout
    assert "None" not in run.stdout and "lower bound 4 bytes" in run.stdout


def test_a_lone_cr_is_named(tmp_path):
    case, plan = tmp_path / "case.csv", tmp_path / "plan.csv"
    case.write_text("id,lower,upper,size\nb,0,1,4\nc,0,1,4\n")
    plan.write_bytes(b"id,offset\r\nb,0\rc,4\r\n")
    run = run_verify(str(case), str(plan), "--capacity", "8", "--json")
    assert json.loads(run.stdout)["message"] == (
        "plan.csv:2: a lone carriage return (CR, \\r) inside the line: lines end with LF or CRLF"
    )


def test_integers_of_any_length_are_read_or_named():
    """int() refuses more than 4,300 digits: found by tests/test_fuzz_readers.py."""
    text = "id,lower,upper,size\nb,0," + "9" * 5000 + ",4\n"
    with pytest.raises(CaseError, match=r"case.csv:2: column 'upper' is '9999.*', outside \[0, "):
        parse_case_bytes(text.encode(), "case.csv", 16)
    padded = "id,lower,upper,size\nb,0,1," + "0" * 30 + "4\n"  # leading zeros: still 4
    assert parse_case_bytes(padded.encode(), "case.csv", 16).size.tolist() == [4]
