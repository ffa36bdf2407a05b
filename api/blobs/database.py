"""Blobs in the service's database: tables `blobs` and `blob_chunks` (1 MiB rows).

Every host already reaches the database, so workers on other hosts need no shared
disk and no further server; the blobs are backed up with the rest. Portable
SQLAlchemy (bytea on PostgreSQL, BLOB on SQLite). A blob and all its chunks are
written in one transaction: a reader finds all of it or nothing. Readers copy a blob
into the host's cache once, checking its sha256 on the way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError

from api.blobs import CHUNK_BYTES, BlobCorrupt, BlobMissing, check_name, file_sha256
from api.blobs.cache import BlobCache
from api.db.models import Blob, BlobChunk
from api.db.session import get_engine, session_scope


class DatabaseBlobs:
    def __init__(self, url: str, cache: BlobCache, legacy: Path | None = None):
        # `legacy`: the folder plans were kept in before the blob store (data_dir/plans,
        # ab/<sha256>), still read: an installation upgraded from then keeps its plans.
        self.url, self.cache, self.legacy = url, cache, legacy

    def put_file(self, path: Path) -> str:
        sha = file_sha256(path)
        if not self.has(sha):
            with path.open("rb") as fh:
                self._insert(sha, path.stat().st_size, iter(lambda: fh.read(CHUNK_BYTES), b""))
        return sha

    def put_bytes(self, data: bytes) -> str:
        sha = hashlib.sha256(data).hexdigest()
        if not self.has(sha):
            view = memoryview(data)
            chunks = (bytes(view[i : i + CHUNK_BYTES]) for i in range(0, len(data), CHUNK_BYTES))
            self._insert(sha, len(data), chunks)
        return sha

    def has(self, sha256: str) -> bool:
        with get_engine(self.url).connect() as conn:
            return conn.scalar(select(Blob.size).where(Blob.sha256 == sha256)) is not None

    def local_path(self, sha256: str) -> Path:
        check_name(sha256)
        found = self.cache.get(sha256)
        if found:
            return found
        try:
            return self.cache.add(sha256, lambda tmp: self._fetch(sha256, tmp))
        except BlobMissing:
            older = self.legacy / sha256[:2] / sha256 if self.legacy else None
            if older is not None and older.is_file():
                return older
            raise

    def _insert(self, sha: str, size: int, chunks: Iterable[bytes]) -> None:
        h = hashlib.sha256()
        try:
            with session_scope(self.url) as db:
                # The blob's row first: a second writer of the same blob waits on it (and
                # then fails on the key) before it writes any chunk.
                db.add(Blob(sha256=sha, size=size))
                db.flush()
                for seq, chunk in enumerate(chunks):
                    h.update(chunk)
                    db.execute(insert(BlobChunk), {"sha256": sha, "seq": seq, "data": chunk})
                if h.hexdigest() != sha:
                    raise BlobCorrupt(f"the file changed while it was stored as {sha}")
        except IntegrityError:
            if not self.has(sha):
                raise  # not the same blob written by another process: a real error

    def _fetch(self, sha256: str, dest: Path) -> None:
        h, size = hashlib.sha256(), 0
        with get_engine(self.url).connect() as conn:
            expected = conn.scalar(select(Blob.size).where(Blob.sha256 == sha256))
            if expected is None:
                raise BlobMissing(f"no blob {sha256}")
            rows = conn.execution_options(yield_per=4).execute(
                select(BlobChunk.data).where(BlobChunk.sha256 == sha256).order_by(BlobChunk.seq)
            )
            with dest.open("wb") as out:
                for (chunk,) in rows:
                    h.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
        if size != expected or h.hexdigest() != sha256:
            raise BlobCorrupt(f"blob {sha256} is damaged in the database: not used")
