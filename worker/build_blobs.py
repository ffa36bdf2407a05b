"""Builds kept in the database blob store for helpers on other hosts (worker.cases.
BlobShare) go once their judging has ended: nothing reads them after that, and each
could take up to 256 MiB of the database for every judging of a contest.

The reaper (beat, one per deployment) collects them a batch per pass. A build blob is
deleted only when no judging still running or queued names it and no other kind of
blob has the same bytes (an upload, an import, a package, a plan: the store is
content-addressed). A helper that looks for a build just collected finds none and
leaves its cases to the owner, as when a build was never shared.
"""

from __future__ import annotations

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from api.db.models import (
    JUDGING_ENDED,
    Blob,
    BlobChunk,
    CaseResultRow,
    ImportJob,
    Judging,
    ProblemVersion,
    Submission,
)
from api.db.session import session_scope
from api.settings import Settings

BATCH = 200  # judgings per pass: a pass stays short however long builds went uncollected


def collect(settings: Settings) -> int:
    """Forget the builds of ended judgings; delete those no one else holds. Returns the
    number of blobs deleted."""
    if settings.blob_store != "database":
        return 0  # builds are shared through the blob store on the database store only
    with session_scope(settings.database_url) as db:
        ended = db.execute(
            select(Judging.id, Judging.build_blob)
            .where(Judging.status.in_(JUDGING_ENDED), Judging.build_blob.is_not(None))
            .limit(BATCH)
        ).all()
        if not ended:
            return 0
        shas = {sha for _, sha in ended}
        gone = sorted(shas - _still_held(db, shas))
        db.execute(
            update(Judging).where(Judging.id.in_([i for i, _ in ended])).values(build_blob=None)
        )
        if gone:
            db.execute(delete(BlobChunk).where(BlobChunk.sha256.in_(gone)))
            db.execute(delete(Blob).where(Blob.sha256.in_(gone)))
        return len(gone)


def _still_held(db: Session, shas: set[str]) -> set[str]:
    """The blobs among `shas` that a live judging's build or any other row names."""
    holders = [
        select(Judging.build_blob).where(
            Judging.status.not_in(JUDGING_ENDED), Judging.build_blob.in_(shas)
        ),
        select(Submission.sha256).where(Submission.sha256.in_(shas)),
        select(ImportJob.sha256).where(ImportJob.sha256.in_(shas)),
        select(ProblemVersion.package_blob).where(ProblemVersion.package_blob.in_(shas)),
        select(CaseResultRow.plan_digest).where(CaseResultRow.plan_digest.in_(shas)),
    ]
    return {sha for query in holders for sha in db.scalars(query)}
