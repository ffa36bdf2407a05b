"""Judging one case of an interactive type (`online`): a dialog, then its transcript.

The sandbox runs the allocator and talks to it (judge.sandbox.dialog); this module
turns what happened into one verdict. A broken rule is reported when it comes
before any fault (the transcript is checked after the run, in event order); else the
run's own fault, with the request and event where it happened.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judge.sandbox import RunOutcome, Session
from judge.sandbox.dialog import CLOSED, DEAF, EXTRA, GARBAGE, LOST, SILENT, Talk
from judge.scoring import CaseResult
from judge.verdict import Verdict
from judge.verifier import check_plan

if TYPE_CHECKING:
    from judge.package import LoadedCase, Problem
    from judge.pipeline import KeepPlan


def judge_dialog_case(
    problem: Problem,
    lc: LoadedCase,
    session: Session,
    time_limit_s: float,
    keep_plan: KeepPlan | None = None,
    replay_backend: str | None = None,
) -> CaseResult:
    from judge.pipeline import _digest, case_result

    ptype: Any = problem.ptype
    case = lc.case
    run, talk = session.run_dialog(ptype.script(case), time_limit_s)  # type: ignore[attr-defined]
    bad = ptype.first_violation(case, talk.answers)
    if bad is not None and (not talk.fault or talk.request < 0 or bad <= talk.request):
        talk.answers = talk.answers[: bad + 1]
        verdict, message = Verdict.INVALID_PLAN, ""
    else:
        verdict, message = _fault(case, talk, run, time_limit_s)
    with tempfile.TemporaryDirectory(prefix="memorace-transcript-") as scratch:
        path = Path(scratch) / ptype.plan_file
        path.write_text(ptype.transcript(case, talk.answers))
        digest = _digest(path)
        score = 0.0
        peak = None
        if verdict in (Verdict.OK, Verdict.INVALID_PLAN):
            verification, score = check_plan(ptype, case, lc.lower_bound, path, replay_backend)
            verdict, message, peak = verification.verdict, verification.message, verification.peak
        if keep_plan is not None and digest is not None:
            keep_plan(path, digest)
    mean, p99 = talk.request_us()
    return case_result(
        lc, run, verdict, message, peak, score, digest, request_us_mean=mean, request_us_p99=p99
    )


def _at(case: Any, talk: Talk) -> str:
    """Where a fault happened, in the case's words."""
    if 0 <= talk.request < len(case):
        r = talk.request
        return f"at event {int(case.lower[r]) + 1} (request {case.ids[r]})"
    if talk.request == LOST:
        return "at an event the judge cannot tell (the sandbox's supervisor was lost)"
    return f"after the last request (event {case.events})"


def _fault(case: Any, talk: Talk, run: RunOutcome, limit_s: float) -> tuple[Verdict, str]:
    """The verdict of a run without an earlier broken rule (OK: verify the answers)."""
    where = _at(case, talk)
    if talk.fault in (SILENT, DEAF) or run.timed_out:
        what = talk.detail if talk.fault in (SILENT, DEAF) else "it did not exit"
        return Verdict.TIME_LIMIT, f"{what} ({limit_s:g} s) {where}"
    if run.output_exceeded:
        return Verdict.OUTPUT_LIMIT, f"the allocator wrote more output than allowed, {where}"
    if run.memory_exceeded:
        return Verdict.MEMORY_LIMIT, f"the allocator ran out of its memory limit, {where}"
    if talk.fault in (GARBAGE, EXTRA):
        return Verdict.BAD_OUTPUT, f"{talk.detail} {where}"
    code = run.exit_code
    if talk.fault == CLOSED:
        if code == 0:
            return Verdict.BAD_OUTPUT, (
                f"the allocator exited after answering {len(talk.answers)} of "
                f"{len(case)} requests: {talk.detail} {where}"
            )
        return Verdict.RUNTIME_ERROR, f"{_died(code)}: {talk.detail} {where}"
    if code:
        return Verdict.RUNTIME_ERROR, f"{_died(code)} after the last request"
    return Verdict.OK, ""


def _died(code: int | None) -> str:
    if code is not None and code < 0:
        return f"the allocator was killed by signal {-code}"
    return f"the allocator exited with status {code}"
