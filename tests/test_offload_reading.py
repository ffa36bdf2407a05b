# ruff: noqa: E501  (tables of input and expected message: one row per line)
"""`offload`: what the judge does where the README was silent (issue 34, item 5), now
written there ("Reading a case or plan"): unknown keys are refused and named, `null`
means absent for every optional field, `writes` is sorted and distinct like `uses`, a
tensor is not recomputed from itself, and a compressed copy-in whose compressed size
is its size holds all its bytes from its copy-in."""

from __future__ import annotations

import copy
import re
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judge.errors import CaseError, PlanError
from judge.types.offload.case import parse_case
from judge.types.offload.plan import parse_plan
from judge.types.offload.verifier import verify
from judge.verdict import Verdict
from tests import offload_reference as ref
from tests.test_offload_v2 import EXAMPLE_CASE, EXAMPLE_PLAN, example_with, with_tensor


def read(case: dict[str, Any], plan: dict[str, Any] = EXAMPLE_PLAN) -> Any:
    c = parse_case(case, "case.json", None)
    return c, parse_plan(plan, "plan.json", c)


def plan_with(**entry: Any) -> dict[str, Any]:
    plan = copy.deepcopy(EXAMPLE_PLAN)
    plan["tensors"][0].update(entry)
    return plan


# --- unknown keys: refused, named ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ({**EXAMPLE_CASE, "capacty": 64}, "the case has an unknown key 'capacty' (it has capacity, h2d_bandwidth"),
        ({k: v for k, v in EXAMPLE_CASE.items() if k != "steps"}, "the case has no steps"),
        (with_tensor(0, sizes=16), "tensors[0] has an unknown key 'sizes' (a tensor has id, size, alignment, uses; optionally writes"),
        ({**EXAMPLE_CASE, "nvme": {**EXAMPLE_CASE["nvme"], "read_bw": 2}}, "nvme has an unknown key 'read_bw'"),
        ({**EXAMPLE_CASE, "nvme": {"read_bandwidth": 2}}, "nvme has no write_bandwidth"),
        (with_tensor(1, recompute={"cost": 2, "from": ["w"], "costs": 1}), "tensor a: recompute must be {\"cost\": µs, \"from\": [tensor ids]}; it has an unknown key 'costs'"),
        (with_tensor(3, compress={"size": 4, "encode": 1}), "tensor k: compress must be {\"size\": bytes, \"encode\": µs, \"decode\": µs}; it has no decode"),
    ],
)  # fmt: skip
def test_unknown_and_missing_case_keys_are_named(case, words):
    with pytest.raises(CaseError, match=re.escape(words)):
        parse_case(case, "case.json", None)


@pytest.mark.parametrize(
    ("plan", "words"),
    [
        ({**EXAMPLE_PLAN, "version": 2}, 'a plan is one JSON object {"tensors": [...]}; it has an unknown key \'version\''),
        (plan_with(offsets=[0]), "tensors[0] must be {\"id\": ..., \"residencies\": [...]}; it has an unknown key 'offsets'"),
        (example_with("w", 1, prefetch_afer=1), "residency 2 of w has an unknown key 'prefetch_afer' (a residency has offset, uses; optionally in, prefetch_after"),
        (example_with("w", 1, offset=None), "residency 2 of w has no offset"),
    ],
)  # fmt: skip
def test_unknown_and_missing_plan_keys_are_named(plan, words):
    case = parse_case(EXAMPLE_CASE, "case.json", None)
    with pytest.raises(PlanError, match=re.escape(words)):
        parse_plan(plan, "plan.json", case)


# --- writes: sorted, distinct, some of the uses --------------------------------------------------


@pytest.mark.parametrize("writes", [[3, 0], [0, 0]])
def test_writes_out_of_order_or_twice_are_refused(writes):
    with pytest.raises(
        CaseError, match=re.escape("tensor w: writes must be sorted, distinct steps in 0..3")
    ):
        parse_case(with_tensor(0, writes=writes), "case.json", None)


# --- recompute from itself -----------------------------------------------------------------------


def test_a_tensor_recomputed_from_itself_is_named_as_such():
    case = with_tensor(1, recompute={"cost": 2, "from": ["w", "a"]})
    with pytest.raises(
        CaseError,
        match=re.escape("tensor a: recompute from a: a tensor is not rebuilt from itself"),
    ):
        parse_case(case, "case.json", None)
    case = with_tensor(1, recompute={"cost": 2, "from": ["zz"]})  # unknown stays unknown
    with pytest.raises(CaseError, match=re.escape("tensor a: recompute from unknown tensor 'zz'")):
        parse_case(case, "case.json", None)


# --- null means absent ---------------------------------------------------------------------------

CASE_OPTIONAL = ("h2d_latency", "d2h_latency", "host_capacity", "nvme")
TENSOR_OPTIONAL = ("writes", "start", "end", "recompute", "compress")
NVME_OPTIONAL = ("read_latency", "write_latency")
RESIDENCY_OPTIONAL = (
    "in",
    "prefetch_after",
    "decode_before",
    "recompute_before",
    "out",
    "priority",
)


def nulls_for_absent(
    case: dict[str, Any], plan: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every optional key that is absent, written as null."""
    case, plan = copy.deepcopy(case), copy.deepcopy(plan)
    for key in CASE_OPTIONAL:
        case.setdefault(key, None)
    if case["nvme"] is not None:
        for key in NVME_OPTIONAL:
            case["nvme"].setdefault(key, None)
    for t in case["tensors"]:
        for key in TENSOR_OPTIONAL:
            t.setdefault(key, None)
    for entry in plan["tensors"]:
        for res in entry["residencies"]:
            for key in RESIDENCY_OPTIONAL:
                res.setdefault(key, None)
    return case, plan


def same(a: Any, b: Any) -> bool:
    (ca, pa), (cb, pb) = a, b
    va, vb = verify(ca, pa), verify(cb, pb)
    return ca.as_json() == cb.as_json() and (va.verdict, va.message, va.makespan) == (
        vb.verdict,
        vb.message,
        vb.makespan,
    )


def test_null_is_absent_for_every_optional_field():
    bare = {k: v for k, v in EXAMPLE_CASE.items() if k not in ("nvme", "host_capacity")}
    bare["tensors"] = [t for t in EXAMPLE_CASE["tensors"] if t.get("start") != "nvme"]
    bare_plan = copy.deepcopy({"tensors": [e for e in EXAMPLE_PLAN["tensors"] if e["id"] != "g"]})
    m = next(e for e in bare_plan["tensors"] if e["id"] == "m")
    m["residencies"][0]["out"] = "copy"  # no nvme here
    quick = {**EXAMPLE_CASE, "nvme": {"read_bandwidth": 2, "write_bandwidth": 2}}
    for case, plan in ((EXAMPLE_CASE, EXAMPLE_PLAN), (bare, bare_plan), (quick, EXAMPLE_PLAN)):
        assert same(read(*nulls_for_absent(case, plan)), read(case, plan))


def null_uses() -> dict[str, Any]:
    plan = copy.deepcopy(EXAMPLE_PLAN)
    plan["tensors"][0]["residencies"][1]["uses"] = None
    return plan


@pytest.mark.parametrize(
    ("case", "plan", "words"),
    [
        (with_tensor(0, size=None), EXAMPLE_PLAN, "w.size must be an integer from 1 to 2^48, not None"),
        (with_tensor(1, recompute={"cost": None, "from": ["w"]}), EXAMPLE_PLAN, "tensor a: recompute cost must be an integer"),
        ({**EXAMPLE_CASE, "steps": None}, EXAMPLE_PLAN, "steps must be a list"),
        (EXAMPLE_CASE, null_uses(), "residency 2 of w: uses must be an integer from 0 to 2^62, not None"),
    ],
)  # fmt: skip
def test_null_in_a_required_field_is_a_wrong_value(case, plan, words):
    with pytest.raises((CaseError, PlanError), match=re.escape(words)):
        read(case, plan)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_nulls_and_unknown_keys_give_a_clear_error_or_the_same_result(data):
    """Nulls on optional keys change nothing; a null elsewhere or an unknown key is a
    CaseError or PlanError, nothing else."""
    case, plan = copy.deepcopy(EXAMPLE_CASE), copy.deepcopy(EXAMPLE_PLAN)
    objects = [(CASE_OPTIONAL, case), (NVME_OPTIONAL, case["nvme"]),
               *((TENSOR_OPTIONAL, t) for t in case["tensors"]),
               *(((), t["recompute"]) for t in case["tensors"] if "recompute" in t),
               *(((), t["compress"]) for t in case["tensors"] if "compress" in t),
               ((), plan), *(((), e) for e in plan["tensors"]),
               *((RESIDENCY_OPTIONAL, r) for e in plan["tensors"] for r in e["residencies"])]  # fmt: skip
    every = sorted(set(CASE_OPTIONAL + TENSOR_OPTIONAL + NVME_OPTIONAL + RESIDENCY_OPTIONAL))
    harmless = True
    for _ in range(data.draw(st.integers(1, 4))):
        optional, obj = data.draw(st.sampled_from(objects))
        key = data.draw(st.sampled_from([*obj, "zz", *every]))
        harmless &= key in optional and key not in obj
        if harmless or data.draw(st.booleans()):
            obj[key] = None
        else:
            obj[key] = data.draw(
                st.one_of(st.none(), st.integers(-3, 3), st.text(max_size=3), st.just([]))
            )
            harmless = False
    try:
        got = read(case, plan)
    except (CaseError, PlanError) as exc:
        assert not harmless, exc
        return
    if harmless:
        assert same(got, read(EXAMPLE_CASE, EXAMPLE_PLAN))
    else:
        verify(*got)  # never raises


# --- a compressed copy-in whose compressed size is its size ---------------------------------------

FULL_CASE: dict[str, Any] = {
    "capacity": 48, "h2d_bandwidth": 4, "d2h_bandwidth": 4, "steps": [4, 4, 4, 4],
    "tensors": [{"id": "k", "size": 16, "alignment": 8, "uses": [0, 3],
                 "compress": {"size": 16, "encode": 1, "decode": 2}},
                {"id": "m", "size": 8, "alignment": 8, "uses": [1]}],
}  # fmt: skip


def full_plan(m_offset: int) -> dict[str, Any]:
    return {"tensors": [
        {"id": "k", "residencies": [{"offset": 0, "uses": 1, "out": "compressed"},
                                    {"offset": 16, "uses": 1, "prefetch_after": 0, "decode_before": 3}]},
        {"id": "m", "residencies": [{"offset": m_offset, "uses": 1}]},
    ]}  # fmt: skip


def test_compressed_size_equal_to_size_holds_every_byte_from_its_copy_in():
    """k = size: no bytes wait for the decode; all are held from after step p (here 0),
    so m may not use them during step 1, before k's decode before step 3."""
    c, p = read(FULL_CASE, full_plan(16))
    result = verify(c, p)
    assert result.verdict == Verdict.INVALID_PLAN
    assert (
        "residency 2 of k and residency 1 of m overlap during step 1 in bytes [16, 24)"
        in result.message
    )
    smaller = copy.deepcopy(FULL_CASE)  # k = 8: the first 8 bytes wait for the decode
    smaller["tensors"][0]["compress"]["size"] = 8
    assert verify(*read(smaller, full_plan(16))).verdict == Verdict.OK
    # the decode still runs (2 µs on the compute stream) and takes no bytes
    result = verify(*read(FULL_CASE, full_plan(32)))
    assert result.verdict == Verdict.OK
    assert Fraction(result.makespan) == Fraction(float(ref.makespan(FULL_CASE, full_plan(32))))


def test_a_compressed_copy_in_is_a_recompute_source_only_once_decoded():
    """Even with k = size, the bytes are compressed until the decode: a recompute before
    the step the source is decoded before finds no source held in full."""
    case = copy.deepcopy(FULL_CASE)
    case["tensors"].append({"id": "r", "size": 8, "alignment": 8, "uses": [0, 3], "writes": [0],
                            "recompute": {"cost": 1, "from": ["k"]}})  # fmt: skip
    plan = full_plan(32)
    plan["tensors"].append({"id": "r", "residencies": [
        {"offset": 40, "uses": 1, "out": "drop"},
        {"offset": 40, "uses": 1, "in": "recompute", "recompute_before": 3}]})  # fmt: skip
    result = verify(*read(case, plan))
    assert (
        "residency 2 of r is recomputed before step 3 from k, but no residency of k holds all its bytes both after step 2 and during step 3"
        in result.message
    )
    plan["tensors"][0]["residencies"][1]["decode_before"] = 2
    assert verify(*read(case, plan)).verdict == Verdict.OK
