"""Blobs in a folder of this host (files at ab/<sha256>): the embedded default."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from api.blobs import CHUNK_BYTES, BlobMissing, check_name, file_sha256
from api.blobs.cache import BlobCache


class LocalBlobs:
    def __init__(self, folder: Path, cache: BlobCache, legacy: Path | None = None):
        # `legacy`: an older folder of the same layout (data_dir/plans) still read.
        self.folder, self.cache, self.legacy = folder, cache, legacy

    def put_file(self, path: Path) -> str:
        if self._stored(sha := file_sha256(path)):
            return sha
        with path.open("rb") as fh:
            return self._put(iter(lambda: fh.read(CHUNK_BYTES), b""))

    def put_bytes(self, data: bytes) -> str:
        if self._stored(sha := hashlib.sha256(data).hexdigest()):
            return sha
        return self._put(iter((data,)))

    def _stored(self, sha256: str) -> bool:
        return (self.folder / sha256[:2] / sha256).is_file()

    def has(self, sha256: str) -> bool:
        try:
            self.local_path(sha256)
        except BlobMissing:
            return False
        return True

    def local_path(self, sha256: str) -> Path:
        check_name(sha256)
        for folder in (self.folder, self.legacy):
            if folder is not None and (path := folder / sha256[:2] / sha256).is_file():
                return path
        raise BlobMissing(f"no blob {sha256}")

    def _put(self, chunks: Iterable[bytes]) -> str:
        self.folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=self.folder, suffix=".partial")
        h = hashlib.sha256()
        try:
            with os.fdopen(fd, "wb") as out:
                for chunk in chunks:
                    h.update(chunk)
                    out.write(chunk)
            sha = h.hexdigest()
            target = self.folder / sha[:2] / sha
            if not target.exists():
                target.parent.mkdir(exist_ok=True)
                os.replace(name, target)  # atomic: a reader never sees half a blob
        finally:
            if os.path.exists(name):
                os.unlink(name)
        return sha
