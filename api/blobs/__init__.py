"""Content-addressed blobs: uploads, stored plans and problem packages, by sha256.

One interface (`BlobStore`), two backends: `LocalBlobs`, a folder of the data dir (the
embedded default: one host), and `DatabaseBlobs`, rows of the service's database, which
every host already reaches, so workers on other hosts need no shared disk and no
extra server (see README, Deployment). A host reads database blobs through its own
size-bounded cache (`BlobCache`), each verified against its sha256 before use.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path
from typing import Protocol

from api.blobs.cache import BlobCache
from api.settings import Settings

CHUNK_BYTES = 1 << 20
SHA256 = re.compile(r"[0-9a-f]{64}")


class BlobMissing(LookupError):
    """No blob with this sha256 (or not a sha256 at all)."""


class BlobCorrupt(ValueError):
    """The stored bytes do not hash to the blob's name: never used."""


class BlobStore(Protocol):
    cache: BlobCache

    def put_file(self, path: Path) -> str:
        """Store the file's bytes (streamed); their sha256. Storing them again is a no-op."""
        ...

    def put_bytes(self, data: bytes) -> str: ...

    def has(self, sha256: str) -> bool: ...

    def local_path(self, sha256: str) -> Path:
        """A file on this host holding the blob (read it, never write it); raises
        BlobMissing or BlobCorrupt."""
        ...


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(CHUNK_BYTES), b""):
            h.update(chunk)
    return h.hexdigest()


def check_name(sha256: str) -> None:
    # A name comes from database rows; it never reaches a path unless it is a sha256.
    if not isinstance(sha256, str) or not SHA256.fullmatch(sha256):
        raise BlobMissing(f"not a blob name: {sha256!r}")


@functools.cache
def blob_store(settings: Settings) -> BlobStore:
    """The configured store of this process (one per settings)."""
    from api.blobs.database import DatabaseBlobs
    from api.blobs.local import LocalBlobs

    blob_cache = BlobCache(settings.cache, settings.blob_cache_mb * 2**20)
    if settings.blob_store == "database":
        return DatabaseBlobs(settings.database_url, blob_cache, legacy=settings.plans)
    return LocalBlobs(settings.blobs, blob_cache, legacy=settings.plans)


def plan_file(settings: Settings, digest: str | None) -> Path | None:
    """A stored plan on this host, or None when there is none (or it is corrupt)."""
    if not digest:
        return None
    try:
        return blob_store(settings).local_path(digest)
    except (BlobMissing, BlobCorrupt):
        return None
