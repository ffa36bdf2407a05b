"""Least-recently-used eviction for the size-bounded cache folders (the build cache, the
service's blob cache): an entry's mtime is its last use; temporaries left by a process
killed while it made an entry go after STALE_TMP_S."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

STALE_TMP_S = 3600.0
Entry = tuple[float, int, Path]  # (mtime: last use, bytes, path)


def evict_oldest(
    entries: list[Entry], max_bytes: int, grace_s: float, remove: Callable[[Path], None]
) -> None:
    """Remove the least recently used entries until the rest fit `max_bytes`, sparing
    those used in the last `grace_s` seconds (a reader may be about to open them)."""
    total = sum(size for _, size, _ in entries)
    spare = time.time() - grace_s
    for mtime, size, path in sorted(entries):
        if total <= max_bytes:
            break
        if mtime < spare:
            remove(path)
            total -= size


def sweep_stale(tmp_root: Path, remove: Callable[[Path], None]) -> None:
    """Remove what in `tmp_root` is older than STALE_TMP_S (left by a killed process)."""
    old = time.time() - STALE_TMP_S
    with suppress(FileNotFoundError):
        for path in tmp_root.iterdir():
            with suppress(FileNotFoundError):
                if path.lstat().st_mtime < old:
                    remove(path)
