"""A size-bounded cache folder of blobs (files) and unpacked packages (folders).

Safe with several processes on one host: an entry appears by an atomic rename of a
finished temporary, so a reader sees all of it or nothing; eviction removes the least
recently used entries (mtime, touched on every use) until the cache is under its bound,
sparing those used in the last GRACE_S seconds (a reader may be about to open them).
Between passes a process may add up to a twentieth of the bound.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from judge.lru import evict_oldest, sweep_stale

GRACE_S = 60.0
TMP = ".tmp"  # temporaries; never a two-letter entry folder


class BlobCache:
    def __init__(self, folder: Path, max_bytes: int, grace_s: float = GRACE_S):
        self.folder, self.max_bytes, self.grace_s = folder, max_bytes, grace_s
        # Bytes this process added since its last eviction pass: a pass walks the whole
        # cache, so it runs once per twentieth of the bound (and on the first add).
        self.added = max_bytes

    def path(self, key: str) -> Path:
        return self.folder / key[:2] / key

    def get(self, key: str) -> Path | None:
        """The entry (touched: recently used), or None."""
        path = self.path(key)
        try:
            os.utime(path)
        except FileNotFoundError:
            return None
        return path

    def add(self, key: str, fill: Callable[[Path], None], tree: bool = False) -> Path:
        """The entry, made by `fill(temporary)` unless another process made it first;
        `fill` writes a file (or, with `tree`, fills a folder) and may raise."""
        target = self.path(key)
        tmp_root = self.folder / TMP
        tmp_root.mkdir(parents=True, exist_ok=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=tmp_root)) if tree else self._tmp_file(tmp_root)
        try:
            fill(tmp)
            try:
                os.replace(tmp, target)
            except OSError:  # a folder cannot replace another's: theirs stays
                if not target.exists():
                    raise
        finally:
            _remove(tmp, tmp_root)
        with suppress(FileNotFoundError):
            self.added += _size(target)
        if self.added >= self.max_bytes // 20:
            self.evict()
        return self.get(key) or target

    def evict(self) -> None:
        self.added = 0
        tmp_root = self.folder / TMP
        evict_oldest(self._entries(), self.max_bytes, self.grace_s, lambda p: _remove(p, tmp_root))
        sweep_stale(tmp_root, lambda p: _remove(p, tmp_root))

    def used_bytes(self) -> int:
        return sum(size for _, size, _ in self._entries())

    def _entries(self) -> list[tuple[float, int, Path]]:
        found = []
        for prefix in self.folder.glob("??"):
            for path in prefix.iterdir():
                with suppress(FileNotFoundError):  # evicted by another process meanwhile
                    found.append((path.stat().st_mtime, _size(path), path))
        return found

    def _tmp_file(self, tmp_root: Path) -> Path:
        fd, name = tempfile.mkstemp(dir=tmp_root)
        os.close(fd)
        return Path(name)


def _size(path: Path) -> int:
    if not path.is_dir():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _remove(path: Path, tmp_root: Path) -> None:
    """Gone at once for readers: a folder is renamed aside before it is deleted."""
    if path.is_dir() and not path.is_symlink():
        aside = tmp_root / f"gone-{os.getpid()}-{time.monotonic_ns()}"
        with suppress(FileNotFoundError):
            path.rename(aside)
            shutil.rmtree(aside, ignore_errors=True)
    else:
        with suppress(FileNotFoundError):
            path.unlink()
