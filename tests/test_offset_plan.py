"""Hostile plan files: each gets a clear BAD_OUTPUT, never a crash."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judge.types import get_type
from judge.types.offset.case import parse_case_bytes
from judge.verdict import Verdict
from judge.verifier import check_plan

OFFSET = get_type("offset")
CASE = parse_case_bytes(b"id,lower,upper,size\na,0,2,8\nb,1,3,8\n", "case.csv", 64)
LB = OFFSET.lower_bound(CASE)


def judge_text(write, content: str | bytes):
    path = write("plan.csv", content)
    return check_plan(OFFSET, CASE, LB, path)[0]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("", "plan.csv:1: file is empty; expected the header 'id,offset'"),
        ("\n\n", "plan.csv:1: file is empty; expected the header 'id,offset'"),
        ("id,off\na,0\nb,8\n", "plan.csv:1: header must be 'id,offset', got 'id,off'"),
        ("id,offset,x\na,0,1\nb,8,1\n", "plan.csv:1: header must be 'id,offset'"),
        ("id,offset\na,0,5\nb,8\n", "plan.csv:2: expected 2 fields (id,offset), got 3 fields"),
        ("id,offset\na,0\n\nb,8\n", "plan.csv:3: expected 2 fields (id,offset), got an empty line"),
        ("id,offset\na,zero\nb,8\n", "plan.csv:2: column 'offset' must be an integer, got 'zero'"),
        ("id,offset\na,1.5\nb,8\n", "plan.csv:2: column 'offset' must be an integer, got '1.5'"),
        ("id,offset\na,0\nb,NaN\n", "plan.csv:3: column 'offset' must be an integer, got 'NaN'"),
        ("id,offset\na,1e3\nb,8\n", "must be an integer, got '1e3'"),
        ("id,offset\na, 8\nb,8\n", "must be an integer, got ' 8'"),
        ("id,offset\na,\nb,8\n", "plan.csv:2: column 'offset' is empty"),
        (
            "id,offset\na,-8\nb,8\n",
            "plan.csv:2: column 'offset' is '-8', outside [0, 4611686018427387904]",
        ),
        (
            "id,offset\na,9223372036854775808\nb,8\n",
            "plan.csv:2: column 'offset' is '9223372036854775808', outside",
        ),
        (
            "id,offset\na,99999999999999999999999\nb,8\n",
            "plan.csv:2: column 'offset' is '99999999999999999999999', outside",
        ),
        ("id,offset\na,0\na,8\n", "plan.csv:3: buffer a appears more than once"),
        ("id,offset\na,0\n", "plan.csv: 1 buffer(s) have no offset: b"),
        ("id,offset\na,0\nb,8\nzz,16\n", "plan.csv:4: unknown buffer id 'zz'"),
        (b"id,offset\na,0\nb,\xff8\n", "plan.csv:3: not UTF-8 text (byte 16 is 0xff)"),
    ],
)
def test_malformed_plans_get_bad_output(write, content, expected):
    v = judge_text(write, content)
    assert v.verdict == Verdict.BAD_OUTPUT
    assert expected in v.message, v.message


def test_windows_line_endings_and_bom_are_accepted(write):
    v = judge_text(write, "\ufeffid,offset\r\na,0\r\nb,8\r\n")
    assert v.verdict == Verdict.OK


def test_missing_plan_file(tmp_path: Path):
    v = check_plan(OFFSET, CASE, LB, tmp_path / "plan.csv")[0]
    assert (v.verdict, v.message) == (Verdict.BAD_OUTPUT, "plan.csv: file not found")


def test_a_1_gb_plan_is_refused_without_reading_it(tmp_path: Path):
    path = tmp_path / "plan.csv"
    with path.open("wb") as fh:  # sparse: costs no disk
        fh.truncate(2**30)
    v = check_plan(OFFSET, CASE, LB, path)[0]
    assert v.verdict == Verdict.BAD_OUTPUT
    assert v.message == "plan.csv: file is 1.0 GiB; the limit here is 1.0 MiB"


def test_plan_that_is_a_directory(tmp_path: Path):
    (tmp_path / "plan.csv").mkdir()
    v = check_plan(OFFSET, CASE, LB, tmp_path / "plan.csv")[0]
    assert v.verdict == Verdict.BAD_OUTPUT


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_never_crash(tmp_path_factory, blob):
    path = tmp_path_factory.mktemp("fuzz") / "plan.csv"
    path.write_bytes(b"id,offset\n" + blob)
    assert check_plan(OFFSET, CASE, LB, path)[0].verdict in set(Verdict)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c", "", "a "]),
            st.text(alphabet="0123456789-+.eE ,x", max_size=24),
        ),
        max_size=4,
    )
)
def test_mutated_rows_are_ok_invalid_or_bad_output(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("fuzz") / "plan.csv"
    path.write_text("id,offset\n" + "".join(f"{i},{o}\n" for i, o in rows))
    v = check_plan(OFFSET, CASE, LB, path)[0]
    assert v.verdict in (Verdict.OK, Verdict.INVALID_PLAN, Verdict.BAD_OUTPUT)
    assert v.verdict == Verdict.OK or v.message


def test_no_file_descriptors_leak(write):
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(50):
        judge_text(write, "id,offset\na,0\n")
    assert len(os.listdir("/proc/self/fd")) == before
