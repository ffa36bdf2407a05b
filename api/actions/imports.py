"""Problem package imports as background jobs.

The API only stores the upload (streamed, capped, into the data directory) and an
`import_jobs` row, queues the job and answers 202; a worker unpacks and checks the
package in a child process with a time and memory limit (worker.imports), so a
huge or hostile package costs the API nothing. `python -m api.actions.imports JOB_ID` is
that child: it runs one job in the current process.
"""

from __future__ import annotations

import logging
import secrets
import shutil
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session
from starlette.requests import Request

from api import queue
from api.access.uploads import Upload, read_upload
from api.actions import baselines, problems
from api.blobs import BlobCorrupt, BlobMissing, blob_store
from api.db.models import ImportJob, ProblemVersion, User, aware, utcnow
from api.db.session import session_scope
from api.errors import NotFound, ServiceError
from api.settings import Settings, get_settings

log = logging.getLogger("memorace.api")
FINISHED = ("done", "failed")
PACKAGE_SUFFIXES = (".zip", ".tar.gz", ".tgz")


def job_folder(settings: Settings, job_id: int) -> Path:
    return settings.imports / str(job_id)


async def receive(request: Request, settings: Settings) -> Upload:
    """The package of an upload form, streamed into a fresh folder of the data dir."""
    staging = settings.imports / f"incoming-{secrets.token_hex(8)}"
    try:
        upload = await read_upload(
            request, settings.package_limit_bytes, "the package upload", staging
        )
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if upload.path is None or not upload.filename:
        shutil.rmtree(staging, ignore_errors=True)
        raise ServiceError(
            "the form field 'file' is missing: send the package (.zip or .tar.gz)", 422
        )
    if not upload.path.name.lower().endswith(PACKAGE_SUFFIXES):
        shutil.rmtree(staging, ignore_errors=True)
        raise ServiceError("upload a problem package as .zip or .tar.gz")
    return upload


def create_job(db: Session, settings: Settings, user: User, upload: Upload) -> ImportJob:
    """The job row (flushed, not committed), with the upload in the blob store (under
    the job's sha256), where the worker that runs the job reads it on any host."""
    assert upload.path is not None
    sha = blob_store(settings).put_file(upload.path)
    job = ImportJob(actor_id=user.id, filename=upload.path.name, sha256=sha)
    db.add(job)
    db.flush()
    discard(settings, upload)
    return job


def discard(settings: Settings, upload: Upload) -> None:
    if upload.path is not None:
        shutil.rmtree(upload.path.parent, ignore_errors=True)


def send(db: Session, job: ImportJob) -> None:
    """Queue a committed job; if the queue is down, the job fails with that reason."""
    try:
        queue.enqueue_import(job.id)
    except Exception as exc:
        log.warning("cannot enqueue import job %s: %s", job.id, exc)
        job.status, job.finished_at = "failed", utcnow()
        job.detail = f"the queue is unreachable, nothing was imported: {exc}"
        db.commit()
        raise ServiceError(job.detail, 503) from exc


def get_job(db: Session, job_id: int) -> ImportJob:
    job = db.get(ImportJob, job_id)
    if job is None:
        raise NotFound(f"no import job {job_id}")
    return job


def recent_jobs(db: Session, limit: int = 20) -> list[ImportJob]:
    return list(db.scalars(select(ImportJob).order_by(ImportJob.id.desc()).limit(limit)))


def job_dict(db: Session, job: ImportJob) -> dict[str, Any]:
    version = db.get(ProblemVersion, job.version_id) if job.version_id else None
    return {
        "id": job.id,
        "status": job.status,
        "detail": job.detail,
        "filename": job.filename,
        "sha256": job.sha256,
        "problem": version.problem.slug if version else None,
        "version": version.number if version else None,
        "cases": len(version.cases) if version else None,
        "created_at": aware(job.created_at).isoformat(),
        "finished_at": aware(job.finished_at).isoformat() if job.finished_at else None,
        "url": f"/api/v1/admin/imports/{job.id}",
    }


def run_job(settings: Settings, job_id: int) -> str:
    """Import the job's package in this process; the job's final status."""
    url = settings.database_url
    with session_scope(url) as db:
        # Claimed in one statement: a re-sent message for the same job runs nothing.
        claimed = db.execute(
            update(ImportJob)
            .where(ImportJob.id == job_id, ImportJob.status == "queued")
            .values(status="running", started_at=utcnow())
        ).rowcount
        job = db.get(ImportJob, job_id)
        if job is None or not claimed:
            return job.status if job else "missing"
        filename, sha, actor_id = job.filename, job.sha256, job.actor_id
    try:
        upload = _fetch_upload(settings, job_id, filename, sha)
        with session_scope(url) as db:
            actor = db.get(User, actor_id) if actor_id else None
            version = problems.import_upload(db, settings, upload, actor)
            version_id, detail = (
                version.id,
                (
                    f"problem '{version.problem.slug}' is at version {version.number} "
                    f"({len(version.cases)} cases)"
                ),
            )
        status = "done"
        baselines.catch_up(settings)
    except ServiceError as exc:
        status, version_id, detail = "failed", None, exc.message
    except Exception as exc:
        log.exception("import job %s failed", job_id)
        status, version_id, detail = "failed", None, f"internal error: {type(exc).__name__}"
    finish(settings, job_id, status, detail, version_id)
    return status


def _fetch_upload(settings: Settings, job_id: int, filename: str, sha: str) -> Path:
    """The uploaded package in the job's folder of this host (with its name: the suffix
    tells the archive's kind); a job queued before the blob store has it there already."""
    path = job_folder(settings, job_id) / filename
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copyfile(blob_store(settings).local_path(sha), path)
        except (BlobMissing, BlobCorrupt) as exc:
            raise ServiceError(f"the uploaded package is unreadable: {exc}") from None
    return path


def resend_lost(settings: Settings) -> list[int]:
    """Re-send jobs queued longer than the reaper's re-send delay whose message the
    broker no longer holds (a lost message, e.g. after a Redis restart; one waiting
    behind a backlog is not lost), and jobs still running long after their time limit
    (their worker died, or a restore brought them back as running: no worker holds
    them). A duplicate message finds the job claimed and does nothing."""
    held = queue.messages_in_broker(queue.IMPORT_TASK, settings.requeue_after_s) or set()
    now = utcnow()
    stale = now - timedelta(seconds=settings.requeue_after_s)
    with session_scope(settings.database_url) as db:
        queued = db.scalars(select(ImportJob).where(ImportJob.status == "queued"))
        ids = [job.id for job in queued if aware(job.created_at) < stale and job.id not in held]
        ids += _abandoned(db, settings, now)
    for job_id in ids:
        try:
            queue.enqueue_import(job_id)
        except Exception as exc:
            log.warning("reaper cannot enqueue import job %s: %s", job_id, exc)
    return ids


def _abandoned(db: Session, settings: Settings, now: datetime) -> list[int]:
    """Running jobs whose worker would have ended them long ago (it stops the import at
    its time limit): queued again. A running job without a start (taken before 0015)
    starts its clock now."""
    limit = timedelta(seconds=settings.import_time_limit_s + 2 * settings.requeue_after_s)
    again = []
    for job in db.scalars(select(ImportJob).where(ImportJob.status == "running")):
        if job.started_at is None:
            job.started_at = now
        elif aware(job.started_at) < now - limit:
            job.status, job.started_at = "queued", None
            job.detail = f"{now:%H:%M:%S} re-sent: the worker importing it stopped answering"
            again.append(job.id)
    return again


def finish(
    settings: Settings, job_id: int, status: str, detail: str, version_id: int | None = None
) -> None:
    """Record the outcome (unless already recorded) and drop the upload."""
    with session_scope(settings.database_url) as db:
        job = db.get(ImportJob, job_id)
        if job is not None and job.status not in FINISHED:
            job.status, job.detail, job.version_id = status, detail, version_id
            job.finished_at = utcnow()
    shutil.rmtree(job_folder(settings, job_id), ignore_errors=True)


def main() -> None:
    settings = get_settings()
    settings.ensure_dirs()
    print(run_job(settings, int(sys.argv[1])))


if __name__ == "__main__":
    main()
