"""Property: for random traces and random answers, the interactive judge agrees with the
`offset` verifier on the transcript, and it never writes past an unanswered request.

The allocator replays a list of answers fixed by the test (mostly first fit, some
replaced by arbitrary offsets). It reads stdin raw and, before answering a request,
checks that nothing after the request line has arrived; if anything has, it says
LOOKAHEAD on stderr (the test fails on it)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judge.package import load_problem
from judge.pipeline import judge_planner
from judge.types import get_type
from judge.types.offset.case import OffsetCase
from judge.types.offset.plan import OffsetPlan
from judge.types.offset.verifier import verify as offset_verify
from judge.types.online.case import parse_case_bytes
from judge.verdict import Verdict
from tests.online_cases import make_package, random_trace, trace_text
from tests.test_sandbox import SANDBOXES

REPLAY = """\
import os, select, sys
ANSWERS = %r
buf, k = b"", 0
while True:
    chunk = os.read(0, 65536)
    if not chunk:
        break
    buf += chunk
    while b"\\n" in buf:
        line, _, buf = buf.partition(b"\\n")
        if line.startswith(b"a "):
            if buf or select.select([0], [], [], 0)[0]:
                sys.stderr.write("LOOKAHEAD\\n")
            os.write(1, b"%%d\\n" %% ANSWERS[k])
            k += 1
"""
CAPACITY = 60_000  # at least; twice the trace's lower bound when that is more
ONLINE = get_type("online")


def first_fit_answers(text: str, rng: random.Random, noise: float, cap: int) -> list[int]:
    case = parse_case_bytes(text.encode(), "t", cap)
    rows, is_alloc = case.event_rows()
    live: dict[int, tuple[int, int]] = {}
    answers: list[int] = []
    for row, alloc in zip(rows.tolist(), is_alloc.tolist(), strict=True):
        if not alloc:
            live.pop(row, None)
            continue
        size, align = int(case.size[row]), int(case.alignment[row])
        at = 0
        for off, sz in sorted(live.values()):
            at = -(-at // align) * align
            if at + size <= off:
                break
            at = max(at, off + sz)
        at = -(-at // align) * align
        if rng.random() < noise:
            at = rng.choice([0, rng.randrange(cap), at + 1, cap])
        live[row] = (at, size)
        answers.append(at)
    return answers


def offset_view(text: str, answers: list[int], upto: int, cap: int):
    """The offset case and plan of the first `upto` requests, the trace cut after them."""
    case = parse_case_bytes(text.encode(), "t", cap)
    lower, upper = case.lower[:upto], case.upper[:upto].copy()
    if upto < len(case) and upto:
        upper = np.minimum(upper, case.lower[upto - 1] + 1)
    ocase = OffsetCase(case.ids[:upto], lower, upper, case.size[:upto], case.alignment[:upto], cap)
    return case, ocase, OffsetPlan(np.array(answers[:upto], dtype=np.int64))


def check_named_pair(case, answers: list[int], message: str) -> None:
    """The request and the live allocation the judge names overlap by the offset rules."""
    named = re.search(r"request (\S+) .*overlaps live allocation (\S+)", message)
    if not named:
        return
    index = case.index()
    a, b = index[named.group(1)], index[named.group(2)]
    assert case.lower[b] <= case.lower[a] < case.upper[b]  # b is live when a is requested
    sa, sb = int(case.size[a]), int(case.size[b])
    assert max(answers[a], answers[b]) < min(answers[a] + sa, answers[b] + sb)


def run_property(sandbox: str, seed: int, requests: int, noise: float, tmp: Path) -> None:
    rng = random.Random(seed)
    text = trace_text(random_trace(rng, requests))
    cap = max(CAPACITY, 2 * ONLINE.lower_bound(parse_case_bytes(text.encode(), "t", 2**62)))
    answers = first_fit_answers(text, rng, noise, cap)
    pkg = make_package(tmp, {"c": text}, capacity=cap, time_limit_s=20.0)
    source = tmp / "replay.py"
    source.write_text(REPLAY % (answers,))
    (result,) = judge_planner(load_problem(pkg), source, sandbox=sandbox, build_cache=None).results
    assert "LOOKAHEAD" not in result.log
    full = offset_verify(*offset_view(text, answers, len(answers), cap)[1:])
    if result.verdict == Verdict.OK:
        assert full.verdict == Verdict.OK and full.peak == result.peak
        return
    assert result.verdict == Verdict.INVALID_PLAN, (result.verdict, result.message, result.log)
    assert full.verdict == Verdict.INVALID_PLAN
    bad = int(re.search(r"event (\d+): request (\S+)", result.message).group(1)) - 1
    case = parse_case_bytes(text.encode(), "t", cap)
    r = int(np.flatnonzero(case.lower == bad)[0])  # the offending request
    upto = offset_view(text, answers, r + 1, cap)
    assert offset_verify(upto[1], upto[2]).verdict == Verdict.INVALID_PLAN
    assert offset_verify(*offset_view(text, answers, r, cap)[1:]).verdict == Verdict.OK
    assert offset_verify(upto[1], upto[2]).peak == result.peak
    check_named_pair(case, answers, result.message)


QUIET = [HealthCheck.function_scoped_fixture]
PROPERTY = dict(
    seed=st.integers(0, 2**32),
    requests=st.integers(1, 120),
    noise=st.sampled_from([0.0, 0.01, 0.05, 0.3]),
)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(**PROPERTY)
def test_local_agrees_with_the_offset_verifier(tmp_path_factory, seed, requests, noise) -> None:
    run_property("local", seed, requests, noise, tmp_path_factory.mktemp("p"))


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(**PROPERTY)
def test_docker_agrees_with_the_offset_verifier(tmp_path_factory, seed, requests, noise) -> None:
    if SANDBOXES[1].marks:  # no engine here and not CI: the docker param is a skip
        import pytest

        pytest.skip(SANDBOXES[1].marks[0].kwargs.get("reason", "no docker"))
    run_property("docker", seed, requests, noise, tmp_path_factory.mktemp("p"))
