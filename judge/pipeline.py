"""The judging pipeline: one function that judges a planner against a problem.

Build once inside the sandbox, run every case there, verify each plan outside
it, report each case result through a callback as it is produced. The CLI,
the queue worker and the tests all call `judge_planner`. The worker judges one
judging's cases in several processes side by side: each calls `judge_planner` with a
`pick` that claims the cases it runs (worker.cases), and a helper only reuses the
build its judging's first process made (`reuse_build`).
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from judge.buildcache import BuildCache, BuildShare, cache_from_env, cached_build
from judge.errors import InputError
from judge.package import CaseSpec, LoadedCase, Problem, load_case, load_cases
from judge.sandbox import RunOutcome, Sandbox, Session, get_sandbox
from judge.scoring import CaseResult, totals
from judge.submission import prepare_submission
from judge.verdict import Verdict
from judge.verifier import check_plan

OnResult = Callable[[CaseResult], None]
OnStart = Callable[[CaseSpec], None]  # a case is about to run (after the build)
# Keeps a plan file under its sha256 (the worker's blob store).
KeepPlan = Callable[[Path, str], object]
# Given the split's cases in package order (after a successful build), the ones this
# call judges, in the order it judges them (default: all of them).
Pick = Callable[[list[CaseSpec]], Iterable[CaseSpec]]
BUILD_TIMEOUT_S = 120.0


@dataclass
class JudgeReport:
    problem: str
    planner: str
    sandbox: str
    results: list[CaseResult] = field(default_factory=list)
    build_error: str = ""
    build_cached: bool = False  # the build's output came from the build cache

    def as_dict(self) -> dict[str, Any]:
        return {
            "problem": self.problem,
            "planner": self.planner,
            "sandbox": self.sandbox,
            "build_error": self.build_error,
            "cases": [r.as_dict() for r in self.results],
            **totals(self.results),
        }


def judge_planner(
    problem: Problem,
    source: Path,
    split: str = "all",
    on_result: OnResult | None = None,
    time_limit_s: float | None = None,
    sandbox: str | Sandbox = "local",
    gpu_slot: int | None = None,
    keep_plan: KeepPlan | None = None,
    replay_backend: str | None = None,
    build_cache: BuildCache | Literal["env"] | None = "env",
    on_start: OnStart | None = None,
    pick: Pick | None = None,
    share: BuildShare | None = None,
) -> JudgeReport:
    """Judge `source` on the cases of `split`; `keep_plan`, when given, is handed every
    plan file and its sha256, to keep (what a rescore re-verifies without running).
    `build_cache`: where builds are kept and reused ("env": MEMORACE_BUILD_CACHE_DIR's).
    `pick`: which cases to judge, chosen once the build stands (cases are then read one
    by one, as they are judged). `share`: the build's way to other processes and hosts;
    with `share.reuse_only`, a build nobody kept raises BuildUnavailable, never builds."""
    box = get_sandbox(sandbox) if isinstance(sandbox, str) else sandbox
    cache = cache_from_env() if build_cache == "env" else build_cache
    report = JudgeReport(problem.slug, Path(source).name, box.name)
    cases = load_cases(problem, split) if pick is None else None  # else: read when judged
    limit = time_limit_s or problem.limits.time_limit_s
    with tempfile.TemporaryDirectory(prefix="memorace-") as scratch:
        try:
            sub = prepare_submission(Path(source), Path(scratch) / "submission")
        except InputError as exc:
            return _all_failed(report, cases or load_cases(problem, split), str(exc), on_result)
        with box.session(sub.root, sub.build, sub.run, problem.limits, gpu_slot) as session:
            built, report.build_cached = cached_build(
                session, sub.root, sub.build, problem.limits, BUILD_TIMEOUT_S, cache, share
            )
            if built is not None and (built.exit_code != 0 or built.timed_out):
                why = built.log or "the build failed"
                return _all_failed(report, cases or load_cases(problem, split), why, on_result)
            if cases is None and pick is not None:
                cases_now: Iterable[LoadedCase] = (
                    load_case(problem, spec) for spec in pick(problem.cases_in(split))
                )
            else:
                cases_now = cases or []
            for lc in cases_now:
                if on_start:
                    on_start(lc.spec)
                result = judge_case(problem, lc, session, limit, keep_plan, replay_backend)
                report.results.append(result)
                if on_result:
                    on_result(result)
    return report


def judge_case(
    problem: Problem,
    lc: LoadedCase,
    session: Session,
    time_limit_s: float,
    keep_plan: KeepPlan | None = None,
    replay_backend: str | None = None,
) -> CaseResult:
    ptype = problem.ptype
    _empty(session.case_dir)
    limits = {**problem.limits.as_dict(), "time_limit_s": time_limit_s, "name": lc.spec.name}
    ptype.write_planner_input(lc.case, session.case_dir, limits)
    if getattr(ptype, "interactive", False):  # an allocator answering request by request
        from judge.interactive import judge_dialog_case

        return judge_dialog_case(problem, lc, session, time_limit_s, keep_plan, replay_backend)
    run = session.run_case(time_limit_s)
    failure = _failure(run, time_limit_s)
    if failure:
        return _failed(lc, *failure, run.log, run.time_s)
    plan_path = session.out_dir / ptype.plan_file
    verification, score = check_plan(ptype, lc.case, lc.lower_bound, plan_path, replay_backend)
    digest = _digest(plan_path)
    if keep_plan is not None and digest is not None:
        keep_plan(plan_path, digest)
    return case_result(
        lc, run, verification.verdict, verification.message, verification.peak, score, digest,
        makespan_us=verification.makespan,
    )  # fmt: skip


def case_result(
    lc: LoadedCase,
    run: RunOutcome,
    verdict: Verdict,
    message: str,
    peak: int | None,
    score: float,
    digest: str | None,
    **extra: Any,
) -> CaseResult:
    """The result of a case whose planner ran (batch or dialog); `extra`: the type's
    own figures (makespan, request times)."""
    return CaseResult(
        case=lc.spec.name,
        split=lc.spec.split,
        weight=lc.spec.weight,
        verdict=verdict,
        message=message,
        lower_bound=lc.lower_bound,
        peak=peak,
        score=score,
        time_s=round(run.time_s, 3),
        plan_digest=digest,
        log=run.log,
        **extra,
    )


def _failure(run: RunOutcome, time_limit_s: float) -> tuple[Verdict, str] | None:
    """The verdict of a run that produced no plan worth reading, if any."""
    if run.timed_out:
        return Verdict.TIME_LIMIT, f"no plan after {time_limit_s:g} s"
    if run.output_exceeded:
        return Verdict.OUTPUT_LIMIT, "the planner wrote more output than allowed"
    if run.memory_exceeded:
        return Verdict.MEMORY_LIMIT, "the planner ran out of its memory limit"
    if run.exit_code is None or run.exit_code == 0:
        return None
    if run.exit_code < 0:
        return Verdict.RUNTIME_ERROR, f"the planner was killed by signal {-run.exit_code}"
    return Verdict.RUNTIME_ERROR, f"the planner exited with status {run.exit_code}"


def _all_failed(
    report: JudgeReport, cases: list[LoadedCase], why: str, on_result: OnResult | None
) -> JudgeReport:
    report.build_error = why
    for lc in cases:
        result = _failed(lc, Verdict.BUILD_ERROR, "the planner did not build", why)
        report.results.append(result)
        if on_result:
            on_result(result)
    return report


def _failed(
    lc: LoadedCase, verdict: Verdict, message: str, log: str = "", time_s: float | None = None
) -> CaseResult:
    return CaseResult(
        lc.spec.name,
        lc.spec.split,
        lc.spec.weight,
        verdict,
        message,
        lc.lower_bound,
        time_s=None if time_s is None else round(time_s, 3),
        log=log,
    )


def _empty(directory: Path) -> None:
    for entry in directory.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _digest(path: Path) -> str | None:
    if not path.is_file() or path.is_symlink():
        return None
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
