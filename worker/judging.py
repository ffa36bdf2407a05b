"""Judging with the database: claim a `judgings` row, run the pipeline for it and
store its results idempotently (worker.results), with helpers judging its cases side
by side (worker.cases); rescoring from stored plans: worker.rescore; reaping stuck
judgings: worker.reaper.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from sqlalchemy import delete
from sqlalchemy.orm import Session

from api import news, queue
from api.actions import finals
from api.actions.submissions import artifact_path
from api.blobs import BlobCorrupt, BlobMissing, blob_store
from api.blobs.packages import package_root
from api.db.models import JUDGING_ENDED, CaseResultRow, CaseRun, Judging, Team, aware, utcnow
from api.db.session import session_scope
from api.news import News
from api.settings import Settings
from judge.buildcache import BuildCache, BuildUnavailable
from judge.package import load_problem
from judge.pipeline import BUILD_TIMEOUT_S, JudgeReport, judge_planner
from judge.sandbox import default_sandbox_name
from judge.sandbox.local_isolation import recorded_name
from judge.scoring import CaseResult
from judge.submission import upload_suffix
from worker.cases import (
    BlobShare,
    CaseClaims,
    Heartbeat,
    fresher_waits,
    has_unclaimed,
    helpers_wanted,
)
from worker.pacing import HiddenPace, budget_s
from worker.results import Superseded, add_line, finish, store

log = logging.getLogger("memorace.worker")
HEARTBEAT_S = 5.0  # at most; four beats fit in the reaper's heartbeat_timeout_s


def beat_every(settings: Settings) -> float:
    """With a timeout below 4 beats, a live judging between two case results looked dead
    (tests use 4 s against a 5 s beat: a judging re-queued while it ran, under load)."""
    return min(HEARTBEAT_S, settings.heartbeat_timeout_s / 4)


MAX_ATTEMPTS = 3
# A case that runs this long past its paced budget is taken from a helper that still
# beats (stuck in a sandbox or a lock): verifying a huge plan and storing it fit.
DEADLINE_MARGIN_S = 120.0


class Busy(Exception):
    """Another live worker seems to run this judging; look again later."""


class Deferred(Exception):
    """Fresher work waits: this judging (a rejudge or a baseline) goes back in line.
    Redis orders by priority already; the embedded file queue does not, and without
    this a contestant's first submission waited behind every baseline judging."""


class JudgeFault(Exception):
    """Ours, not the contestant's: a JUDGE_ERROR (retried), never a BUILD_ERROR."""


def run_judging(settings: Settings, judging_id: int, worker: str, gpu_slot: int | None) -> str:
    """The judging's owner: claim it, build, judge cases (with helpers) until every case
    is stored, then make it final."""
    claimed = _claim(settings, judging_id, worker)
    if isinstance(claimed, str):
        return claimed

    def ask_for_helpers(cases: int) -> None:
        if (wanted := helpers_wanted(settings, cases)) == 0:
            return
        try:
            queue.enqueue_helpers(judging_id, claimed.attempt, wanted, claimed.priority)
        except Exception as exc:  # no helpers: this process judges every case itself
            log.warning("judging %s: helpers not asked for: %s", judging_id, exc)

    claims = CaseClaims(settings, judging_id, claimed.attempt, worker, True, ask_for_helpers)
    wanted = helpers_wanted(settings, len(claimed.weights))
    share = BlobShare(settings, judging_id, reuse_only=False, helpers=wanted)
    try:
        report = _run(settings, judging_id, claimed, gpu_slot, worker, claims, share)
    except Superseded:
        return "superseded"
    if report.build_cached:
        log.info("judging build reused from the build cache", extra={"judging": judging_id})
    try:
        finish(settings.database_url, judging_id, claimed.attempt, report.build_error)
    except Superseded:
        return "superseded"
    log.info(
        "judging final",
        extra={"judging": judging_id, "attempt": claimed.attempt, "cases": len(report.results),
               **{k: v for k, v in report.as_dict().items() if k.endswith("score")}},
    )  # fmt: skip
    return "final"


def run_helper(
    settings: Settings, judging_id: int, attempt: int, worker: str, gpu_slot: int | None
) -> str:
    """A helper: judge cases of the judging's `attempt` while any is left, with the build
    its owner kept; never builds, never fails the judging (the owner judges what a
    helper could not)."""
    claimed = _helper_claim(settings, judging_id, attempt)
    if isinstance(claimed, str):
        return claimed
    claims = CaseClaims(settings, judging_id, attempt, worker, owner=False)
    share = BlobShare(settings, judging_id, reuse_only=True)
    try:
        report = _run(settings, judging_id, claimed, gpu_slot, worker, claims, share)
    except Superseded:
        return "superseded"
    except BuildUnavailable as exc:
        log.info("judging %s: helper %s found no build to reuse: %s", judging_id, worker, exc)
        return "no build"
    except Exception:
        log.exception("judging %s: helper %s failed; its cases go back", judging_id, worker)
        claims.release()
        return "failed"
    return f"helped: {len(report.results)} cases"


def _helper_claim(settings: Settings, judging_id: int, attempt: int) -> str | Claim:
    with session_scope(settings.database_url) as db:
        j = db.get(Judging, judging_id)
        if j is None or j.status != "running" or j.attempt != attempt:
            return "superseded"
        claimed = _claim_of(db, j)
    if not has_unclaimed(settings, judging_id, attempt, len(claimed.weights)):
        return "nothing left"
    return claimed


def _run(
    settings: Settings,
    judging_id: int,
    claimed: Claim,
    gpu_slot: int | None,
    worker: str,
    claims: CaseClaims,
    share: BlobShare,
) -> JudgeReport:
    url, owner = settings.database_url, claims.owner
    beat = Heartbeat(url, judging_id, claimed.attempt, worker, beat_every(settings), owner)
    beat.start()
    try:
        with tempfile.TemporaryDirectory(prefix="memorace-source-") as tmp:
            return _judge(settings, judging_id, claimed, gpu_slot, Path(tmp), claims, share)
    finally:
        beat.stop()


def _judge(
    settings: Settings,
    judging_id: int,
    claimed: Claim,
    gpu_slot: int | None,
    tmp: Path,
    claims: CaseClaims,
    share: BlobShare,
) -> JudgeReport:
    url, attempt, weights = settings.database_url, claimed.attempt, claimed.weights
    problem = load_problem(package_root(settings, claimed.package_blob, claimed.package_path))
    artifact = submission_file(settings, claimed.sha256, claimed.filename, tmp)
    _check_visibility(problem.limits.time_limit_s * len(weights) + BUILD_TIMEOUT_S)
    box = settings.sandbox or default_sandbox_name()
    if claims.owner:
        with session_scope(url) as db:
            db.get(Judging, judging_id).sandbox = recorded_name(box)  # type: ignore[union-attr]
    blobs = blob_store(settings)
    hidden = sum(1 for c in problem.cases if c.split != "public" and c.name in weights)
    pace = HiddenPace(problem.limits.time_limit_s, claimed.paced and settings.pace_hidden,
                      judging_id, hidden)  # fmt: skip

    claims.deadline = timedelta(seconds=budget_s(problem.limits.time_limit_s) + DEADLINE_MARGIN_S)

    def on_result(result: CaseResult) -> None:
        store(url, judging_id, attempt, result, weights)
        pace.hold(result)  # stored first: organizers see it at once
        claims.done(result.case)  # after the pacing: the judging's end waits for it

    try:
        return judge_planner(
            problem,
            artifact,
            split=claimed.split,
            on_result=on_result,
            on_start=pace.start,
            sandbox=box,
            gpu_slot=gpu_slot,
            keep_plan=lambda plan, _digest: blobs.put_file(plan),
            replay_backend=settings.replay_for(problem.slug),
            # Per team: no team learns from a first result's speed whether another built
            # these bytes, or gets another team's build (judge.buildcache).
            build_cache=BuildCache(
                settings.build_cache, settings.build_cache_mb * 2**20, owner=claimed.team
            ),
            pick=claims,
            share=share,
        )
    except (Superseded, BuildUnavailable):
        raise
    except Exception:  # a judge error: in a hidden case, told when its cases would end
        if claims.owner:  # a helper gives its cases back at once (run_helper)
            pace.hold_failure()
        raise


def submission_file(settings: Settings, sha256: str, filename: str, folder: Path) -> Path:
    """The submission's bytes in `folder`, named with the upload's suffix (it tells the
    judge the kind of submission): from the blob store, or where older uploads lie."""
    try:
        source = blob_store(settings).local_path(sha256)
    except (BlobMissing, BlobCorrupt) as exc:
        source = artifact_path(settings, sha256, filename)
        if not source.is_file():
            raise JudgeFault(
                f"the submission's file is unreadable ({exc}); with MEMORACE_BLOB_STORE=local "
                "the API and every worker must share MEMORACE_DATA_DIR"
            ) from None
    target = folder / f"{sha256}{upload_suffix(filename)}"
    shutil.copyfile(source, target)
    return target


def _check_visibility(longest_s: float) -> None:
    # Redis hands an unacknowledged task to another worker after the visibility
    # timeout: a judging longer than that would run twice (harmless, as attempts
    # guard the rows, but wasteful), so say so loudly.
    if longest_s > queue.VISIBILITY_TIMEOUT_S:
        log.error(
            "a judging may take %.0f s, longer than the broker's visibility timeout (%d s); "
            "raise api.queue.VISIBILITY_TIMEOUT_S",
            longest_s,
            queue.VISIBILITY_TIMEOUT_S,
        )


@dataclass(frozen=True)
class Claim:
    attempt: int
    package_blob: str | None
    package_path: str
    sha256: str
    filename: str
    weights: dict[str, float]
    split: str = "all"  # "public" for a baseline before the reveal, or a contest whose
    # hidden cases run only in the final judging (api.actions.finals)
    paced: bool = False  # hidden cases held to their budget (worker.pacing)
    team: str = "team-0"  # the submission's team: its builds are kept apart
    priority: int = 0  # the judging's queue priority: its helpers get the same


def _claim(settings: Settings, judging_id: int, worker: str) -> str | Claim:
    """Take the judging for this attempt, or say why not (a no-op redelivery)."""
    with session_scope(settings.database_url) as db:
        j = db.get(Judging, judging_id, with_for_update=True)
        if j is None:
            return "missing"
        if j.status in JUDGING_ENDED:
            return j.status  # a redelivery of finished work: nothing to do
        if j.status == "running" and _fresh(j, settings):
            raise Busy(f"judging {judging_id} is running on {j.worker}")
        if j.status == "queued" and fresher_waits(db, j):
            raise Deferred(f"judging {judging_id} waits for fresher judgings")
        if j.status == "running":
            j.reason = add_line(j.reason, f"attempt {j.attempt} on {j.worker} was lost; restarted")
        j.attempt += 1
        j.status, j.worker, j.build_blob = "running", worker, None
        j.started_at = j.heartbeat_at = utcnow()
        # A lost attempt's partial results go: the new attempt writes every case again.
        db.execute(delete(CaseResultRow).where(CaseResultRow.judging_id == j.id))
        db.execute(delete(CaseRun).where(CaseRun.judging_id == j.id))
        j.split = finals.split_for(db, j.submission, j.kind)
        claimed = _claim_of(db, j)
        sub = j.submission
        sub.status = "running"
        sub.status_detail = f"judging on {worker}: 0 of {len(claimed.weights)} cases"
        news.after_commit(db, News(sub.id, queue=True, team=sub.team_id))  # it left the queue
        return claimed


def _claim_of(db: Session, j: Judging) -> Claim:
    sub, split = j.submission, j.split
    version = sub.version
    weights = {c.name: c.weight for c in version.cases if split in ("all", c.split)}
    return Claim(
        j.attempt, version.package_blob, version.package_path, sub.sha256, sub.filename,
        weights, split, finals.paces_hidden(db, sub, j.kind), build_owner(sub.team), j.priority,
    )  # fmt: skip


def build_owner(team: Team) -> str:
    """The team's name in the build cache: its id and when it was made, so that a team of
    a database made again (ids start over) is not served a build of the old one."""
    return f"team-{team.id}-{int(aware(team.created_at).timestamp())}"


def _fresh(j: Judging, settings: Settings) -> bool:
    beat = j.heartbeat_at
    return beat is not None and utcnow() - aware(beat) < timedelta(
        seconds=settings.heartbeat_timeout_s
    )


def fail_judging(settings: Settings, judging_id: int, why: str, retry: bool) -> None:
    """A JUDGE_ERROR: back to the queue while attempts remain, else `failed`, said plainly."""
    with session_scope(settings.database_url) as db:
        j = db.get(Judging, judging_id, with_for_update=True)
        if j is None or j.status not in ("running", "queued"):
            return
        j.reason = add_line(j.reason, f"attempt {j.attempt}: judge error: {why}")
        sub = j.submission
        news.after_commit(db, News(sub.id, queue=True, team=sub.team_id))
        if retry and j.attempt < MAX_ATTEMPTS:
            j.status, j.enqueued_at = "queued", utcnow()
            sub.status = "queued"
            sub.status_detail = f"the judge failed ({why}); retrying"
        else:
            j.status, j.finished_at = "failed", utcnow()
            sub.status = "error"
            sub.status_detail = (
                f"the judge failed after {j.attempt} attempts ({why}); this is our fault, "
                "not your planner's: an organizer has been told and can rejudge it"
            )


def still_queued(settings: Settings, judging_id: int) -> bool:
    with session_scope(settings.database_url) as db:
        j = db.get(Judging, judging_id)
        return j is not None and j.status == "queued"
