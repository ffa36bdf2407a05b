"""Judging with the database: run the pipeline for one `judgings` row and store its
results idempotently (rescoring from stored plans: worker.rescore; reaping stuck
judgings: worker.reaper).

Every (re)start of a judging bumps its `attempt`; each write checks it, so a
redelivered or duplicated task never mixes its results with another attempt's,
and the unique (judging, case) key means no case is ever stored twice.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from api import finals, news, queue
from api.blobs import BlobCorrupt, BlobMissing, blob_store
from api.blobs.packages import package_root
from api.db.models import CaseResultRow, Judging, Team, aware, utcnow
from api.db.session import session_scope
from api.news import News
from api.settings import Settings
from api.submissions import artifact_path
from judge.buildcache import BuildCache
from judge.package import load_problem
from judge.pipeline import BUILD_TIMEOUT_S, judge_planner
from judge.sandbox import default_sandbox_name
from judge.sandbox.local_isolation import recorded_name
from judge.scoring import CaseResult, problem_score, totals
from judge.submission import upload_suffix
from judge.verdict import Verdict
from worker.pacing import HiddenPace

log = logging.getLogger("memorace.worker")
HEARTBEAT_S = 5.0  # at most; four beats fit in the reaper's heartbeat_timeout_s


def beat_every(settings: Settings) -> float:
    """With a timeout below 4 beats, a live judging between two case results looked dead
    (tests use 4 s against a 5 s beat: a judging re-queued while it ran, under load)."""
    return min(HEARTBEAT_S, settings.heartbeat_timeout_s / 4)


MAX_ATTEMPTS = 3


class Superseded(Exception):
    """This attempt no longer owns its judging (reaped, rejudged or taken over)."""


class Busy(Exception):
    """Another live worker seems to run this judging; look again later."""


class Deferred(Exception):
    """Fresher work waits: this judging (a rejudge or a baseline) goes back in line.
    Redis orders by priority already; the embedded file queue does not, and without
    this a contestant's first submission waited behind every baseline judging."""


class JudgeFault(Exception):
    """Ours, not the contestant's: a JUDGE_ERROR (retried), never a BUILD_ERROR."""


def run_judging(settings: Settings, judging_id: int, worker: str, gpu_slot: int | None) -> str:
    url = settings.database_url
    claimed = _claim(settings, judging_id, worker)
    if isinstance(claimed, str):
        return claimed
    beat = _Heartbeat(url, judging_id, claimed.attempt, beat_every(settings))
    beat.start()
    try:
        with tempfile.TemporaryDirectory(prefix="memorace-source-") as tmp:
            return _judge(settings, judging_id, claimed, gpu_slot, Path(tmp))
    except Superseded:
        return "superseded"
    finally:
        beat.stop()


def _judge(
    settings: Settings, judging_id: int, claimed: Claim, gpu_slot: int | None, tmp: Path
) -> str:
    url, attempt, weights = settings.database_url, claimed.attempt, claimed.weights
    problem = load_problem(package_root(settings, claimed.package_blob, claimed.package_path))
    artifact = submission_file(settings, claimed.sha256, claimed.filename, tmp)
    _check_visibility(problem.limits.time_limit_s * len(weights) + BUILD_TIMEOUT_S)
    box = settings.sandbox or default_sandbox_name()
    with session_scope(url) as db:
        db.get(Judging, judging_id).sandbox = recorded_name(box)  # type: ignore[union-attr]
    store = blob_store(settings)
    hidden = sum(1 for c in problem.cases if c.split != "public" and c.name in weights)
    pace = HiddenPace(problem.limits.time_limit_s, claimed.paced and settings.pace_hidden,
                      judging_id, hidden)  # fmt: skip

    def on_result(result: CaseResult) -> None:
        _store(url, judging_id, attempt, result, weights)
        pace.hold(result)  # stored first: organizers see it at once

    try:
        report = judge_planner(
            problem,
            artifact,
            split=claimed.split,
            on_result=on_result,
            on_start=pace.start,
            sandbox=box,
            gpu_slot=gpu_slot,
            keep_plan=lambda plan, _digest: store.put_file(plan),
            replay_backend=settings.replay_for(problem.slug),
            # Per team: no team learns from a first result's speed whether another built
            # these bytes, or gets another team's build (judge.buildcache).
            build_cache=BuildCache(
                settings.build_cache, settings.build_cache_mb * 2**20, owner=claimed.team
            ),
        )
    except Superseded:
        raise
    except Exception:  # a judge error: in a hidden case, told when its cases would end
        pace.hold_failure()
        raise
    if report.build_cached:
        log.info("judging build reused from the build cache", extra={"judging": judging_id})
    _finish(url, judging_id, attempt, report.build_error)
    log.info(
        "judging final",
        extra={"judging": judging_id, "attempt": attempt, "cases": len(report.results),
               **{k: v for k, v in report.as_dict().items() if k.endswith("score")}},
    )  # fmt: skip
    return "final"


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
    # hidden cases run only in the final judging (api.finals)
    paced: bool = False  # hidden cases held to their budget (worker.pacing)
    team: str = "team-0"  # the submission's team: its builds are kept apart


def _claim(settings: Settings, judging_id: int, worker: str) -> str | Claim:
    """Take the judging for this attempt, or say why not (a no-op redelivery)."""
    with session_scope(settings.database_url) as db:
        j = db.get(Judging, judging_id, with_for_update=True)
        if j is None:
            return "missing"
        if j.status in ("final", "superseded", "failed"):
            return j.status  # a redelivery of finished work: nothing to do
        if j.status == "running" and _fresh(j, settings):
            raise Busy(f"judging {judging_id} is running on {j.worker}")
        if j.status == "queued" and _fresher_waits(db, j):
            raise Deferred(f"judging {judging_id} waits for fresher judgings")
        if j.status == "running":
            j.reason = _add(j.reason, f"attempt {j.attempt} on {j.worker} was lost; restarted")
        j.attempt += 1
        j.status, j.worker = "running", worker
        j.started_at = j.heartbeat_at = utcnow()
        # A lost attempt's partial results go: the new attempt writes every case again.
        db.execute(delete(CaseResultRow).where(CaseResultRow.judging_id == j.id))
        sub = j.submission
        version = sub.version
        j.split = split = finals.split_for(db, sub, j.kind)
        weights = {c.name: c.weight for c in version.cases if split in ("all", c.split)}
        sub.status = "running"
        sub.status_detail = f"judging on {worker}: 0 of {len(weights)} cases"
        news.after_commit(db, News(sub.id, queue=True, team=sub.team_id))  # it left the queue
        return Claim(
            j.attempt, version.package_blob, version.package_path, sub.sha256, sub.filename,
            weights, split, finals.paces_hidden(db, sub, j.kind), build_owner(sub.team),
        )  # fmt: skip


def build_owner(team: Team) -> str:
    """The team's name in the build cache: its id and when it was made, so that a team of
    a database made again (ids start over) is not served a build of the old one."""
    return f"team-{team.id}-{int(aware(team.created_at).timestamp())}"


def _fresher_waits(db: Session, j: Judging) -> bool:
    fresher = select(Judging.id).where(Judging.status == "queued", Judging.priority < j.priority)
    return db.scalar(fresher.limit(1)) is not None


def _fresh(j: Judging, settings: Settings) -> bool:
    beat = j.heartbeat_at
    return beat is not None and utcnow() - aware(beat) < timedelta(
        seconds=settings.heartbeat_timeout_s
    )


def _add(reason: str, line: str) -> str:
    return f"{reason}\n{line}".strip()


def _owned(db: Session, judging_id: int, attempt: int) -> Judging:
    j = db.get(Judging, judging_id, with_for_update=True)
    if j is None or j.attempt != attempt or j.status != "running":
        raise Superseded
    return j


def _store(
    url: str, judging_id: int, attempt: int, r: CaseResult, weights: dict[str, float]
) -> None:
    with session_scope(url) as db:
        j = _owned(db, judging_id, attempt)
        db.add(_row(j.id, r, weights.get(r.case, r.weight)))
        db.flush()
        j.heartbeat_at = utcnow()
        done = db.scalar(
            select(func.count(CaseResultRow.id)).where(CaseResultRow.judging_id == j.id)
        )
        j.submission.status_detail = f"judging on {j.worker}: {done} of {len(weights)} cases"
        news.after_commit(db, News(j.submission_id, team=j.submission.team_id))


def _row(judging_id: int, r: CaseResult, weight: float) -> CaseResultRow:
    return CaseResultRow(
        judging_id=judging_id,
        case=r.case,
        split=r.split,
        weight=weight,
        verdict=str(r.verdict),
        message=r.message,
        peak=r.peak,
        lower_bound=r.lower_bound,
        score=r.score,
        time_s=r.time_s,
        plan_digest=r.plan_digest,
        log=r.log,
        makespan_us=r.makespan_us,
        request_us_mean=r.request_us_mean,
        request_us_p99=r.request_us_p99,
    )


def _finish(url: str, judging_id: int, attempt: int, build_error: str) -> None:
    with session_scope(url) as db:
        j = _owned(db, judging_id, attempt)
        j.build_error = build_error
        _finalize(db, j)


def _finalize(db: Session, j: Judging) -> None:
    results = [_case_result(r) for r in j.results]
    j.public_score = problem_score(results, "public")
    j.hidden_score = problem_score(results, "hidden")
    j.status, j.finished_at = "final", utcnow()
    sub = j.submission
    news.after_commit(db, News(sub.id, team=sub.team_id, board=True))
    sub.current_judging_id = j.id
    sub.public_score, sub.hidden_score = j.public_score, j.hidden_score
    newer = db.scalar(
        select(Judging.id).where(
            Judging.submission_id == sub.id,
            Judging.id > j.id,
            Judging.status.in_(("queued", "running")),
        )
    )
    if newer is None:
        sub.status = "done"
        counts = sorted(totals(results)["verdicts"].items())
        sub.status_detail = f"judged ({j.kind}): " + ", ".join(f"{n} {v}" for v, n in counts)


def _case_result(row: CaseResultRow) -> CaseResult:
    return CaseResult(
        row.case, row.split, row.weight, Verdict(row.verdict), row.message, row.lower_bound,
        row.peak, row.score, row.time_s, row.plan_digest, row.log, row.makespan_us,
        row.request_us_mean, row.request_us_p99,
    )  # fmt: skip


def fail_judging(settings: Settings, judging_id: int, why: str, retry: bool) -> None:
    """A JUDGE_ERROR: back to the queue while attempts remain, else `failed`, said plainly."""
    with session_scope(settings.database_url) as db:
        j = db.get(Judging, judging_id, with_for_update=True)
        if j is None or j.status not in ("running", "queued"):
            return
        j.reason = _add(j.reason, f"attempt {j.attempt}: judge error: {why}")
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


class _Heartbeat:
    """Marks the judging alive every few seconds, so the reaper can tell a dead worker."""

    def __init__(self, url: str, judging_id: int, attempt: int, every_s: float):
        self.url, self.judging_id, self.attempt, self.every_s = url, judging_id, attempt, every_s
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopped.set()

    def _loop(self) -> None:
        while not self.stopped.wait(self.every_s):
            try:
                with session_scope(self.url) as db:
                    db.execute(
                        update(Judging)
                        .where(Judging.id == self.judging_id, Judging.attempt == self.attempt)
                        .values(heartbeat_at=utcnow())
                    )
            except Exception as exc:  # a database hiccup must not kill the judging
                log.warning("heartbeat of judging %s failed: %s", self.judging_id, exc)


def still_queued(settings: Settings, judging_id: int) -> bool:
    with session_scope(settings.database_url) as db:
        j = db.get(Judging, judging_id)
        return j is not None and j.status == "queued"
