"""The `online` readers (case, transcript) and the verifier's messages, without running
anything; hypothesis fuzz of both readers (a clear CaseError / PlanError or a value)."""

from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judge.errors import CaseError, PlanError
from judge.replay import replay
from judge.types import get_type
from judge.types.online.case import case_events, format_events, parse_case_bytes
from judge.types.online.plan import Transcript, parse_transcript_bytes
from judge.types.online.verifier import verify
from judge.verdict import Verdict
from tests.online_cases import random_trace, trace_text

ONLINE = get_type("online")
CASE = "# a comment\nhints cat layer\na x 100 8 act 0\na y 50 1 - 1\nf x\na z 100 4 tmp 2\n"


def case(text: str = CASE, capacity: int = 1000):
    return parse_case_bytes(text.encode(), "c.events", capacity)


def test_a_case_reads_as_columns_in_event_order() -> None:
    c = case()
    assert c.hint_names == ("cat", "layer") and c.ids == ["x", "y", "z"]
    assert c.lower.tolist() == [0, 1, 3] and c.upper.tolist() == [2, 4, 4]
    assert c.freed.tolist() == [True, False, False] and c.events == 4
    assert ONLINE.lower_bound(c) == 150  # x and y live together, then y and z
    again = parse_case_bytes(format_events(c.hint_names, case_events(c)).encode(), "r", 1000)
    assert again.ids == c.ids and again.upper.tolist() == c.upper.tolist()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("a x 1 1\n", "first line must be 'hints'"),
        ("hints Cat\n", "hint name 'Cat'"),
        ("hints a a\n", "repeats"),
        ("hints\na x 0 1\n", "size '0'"),
        ("hints\na x 1 0\n", "alignment '0'"),
        ("hints\na x 5 1 extra\n", "0 hint value(s)"),
        ("hints\na x 1 1\na x 1 1\n", "already allocated"),
        ("hints\nf x\n", "never allocated"),
        ("hints\na x 1 1\nf x\nf x\n", "freed twice"),
        ("hints\nz x\n", "starts with 'a' or 'f'"),
        ("hints\na x 4611686018427387905 1\n", "not an integer in [1, 2^62]"),
        ("hints\na b\xe9 1 1\n", "not ASCII"),
        ("hints\na x/y 1 1\n", "id 'x/y'"),
        ("", "no 'hints' line"),
    ],
)
def test_bad_cases_are_named_with_their_line(text: str, says: str) -> None:
    with pytest.raises(CaseError) as err:
        parse_case_bytes(text.encode("latin-1"), "c.events", 100)
    assert says in str(err.value), str(err.value)


def test_the_verifier_names_the_first_violation_in_event_order() -> None:
    c = case()
    ok = verify(c, Transcript(np.array([0, 100, 152])))
    assert ok.verdict == Verdict.OK and ok.peak == 252
    hit = verify(c, Transcript(np.array([0, 100, 120])))
    assert hit.verdict == Verdict.INVALID_PLAN
    assert hit.message.startswith("event 4: request z (100 bytes) at offset 120 overlaps live")
    assert "allocation y (bytes [100, 150), requested at event 2) in bytes [120, 150)" in (
        hit.message
    )
    # x is freed before z comes: z may reuse x's bytes; a misaligned y comes first
    assert verify(c, Transcript(np.array([0, 100, 0]))).verdict == Verdict.OK
    early = verify(c, Transcript(np.array([0, 99, 301])))  # y hits x before z is misaligned
    assert early.message.startswith("event 2: request y"), early.message
    odd = verify(c, Transcript(np.array([0, 100, 301])))
    assert "event 4: request z (100 bytes) at offset 301, not a multiple of its alignment 4" in (
        odd.message
    )
    past = verify(c, Transcript(np.array([0, 100, 904])))
    assert "past the capacity 1000" in past.message
    cut = verify(c, Transcript(np.array([0, 100])))
    assert "answers 2 of the case's 3 requests" in cut.message


def test_transcripts_read_as_prefix_or_any_order() -> None:
    c = case()
    assert parse_transcript_bytes(b"id,offset\nx,0\ny,100\n", "t", c).answered == 2
    whole = parse_transcript_bytes(b"id,offset\nz,300\nx,0\ny,100\n", "t", c)
    assert whole.offset.tolist() == [0, 100, 300]
    with pytest.raises(PlanError, match="unknown buffer id"):
        parse_transcript_bytes(b"id,offset\ny,0\nq,1\n", "t", c)
    with pytest.raises(PlanError):
        parse_transcript_bytes(b"id,offset\nx,-1\n", "t", c)


def test_replay_agrees_and_memorace_verify_takes_the_type_from_the_suffix(tmp_path) -> None:
    rng = random.Random(3)
    text = trace_text(random_trace(rng, 300))
    (tmp_path / "c.events").write_text(text)
    c = parse_case_bytes(text.encode(), "c", 2**40)
    stack, top = [], 0  # a bump pointer: never reuses, always valid
    for size, align in zip(c.size.tolist(), c.alignment.tolist(), strict=True):
        top = -(-top // align) * align
        stack.append(top)
        top += size
    t = Transcript(np.array(stack, dtype=np.int64))
    assert verify(c, t).verdict == Verdict.OK and replay("online", c, t, "numpy").ok
    rows = "".join(f"{b},{o}\n" for b, o in zip(c.ids, stack, strict=True))
    (tmp_path / "t.csv").write_text("id,offset\n" + rows)
    files = [str(tmp_path / "c.events"), str(tmp_path / "t.csv")]
    cli = [sys.executable, "-m", "judge", "verify", *files]
    done = subprocess.run([*cli, "--capacity", str(2**40)], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("OK"), done.stdout + done.stderr


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400) | st.text(alphabet="af hints0123456789xy-#\n\r", max_size=200))
def test_fuzz_the_case_reader(data) -> None:
    raw = data if isinstance(data, bytes) else data.encode()
    try:
        c = parse_case_bytes(raw, "f.events", 2**62)
    except CaseError as exc:
        assert exc.file == "f.events" and exc.message
        return
    assert len(c.ids) == len(set(c.ids)) and (c.upper > c.lower).all()


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200) | st.text(alphabet="id,offsetxyz0123456789-\n", max_size=120))
def test_fuzz_the_transcript_reader(data) -> None:
    raw = data if isinstance(data, bytes) else data.encode()
    try:
        t = parse_transcript_bytes(raw, "t.csv", case())
    except PlanError as exc:
        assert exc.message
        return
    assert t.answered <= 3
    verify(case(), t)  # never raises on a parsed transcript
