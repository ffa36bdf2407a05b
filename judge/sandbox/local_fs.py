"""Folders of the local sandbox: who may enter them, how much a planner wrote into them
(an iterative, bounded walk: planners nest folders deeper than Python's stack), and
copying and removing trees of any depth."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from judge.sandbox.base import OUTPUT_LIMIT_BYTES, SandboxError, brief

MAX_OUT_DEPTH = 64  # folders in /out (it is for the plan): deeper is "too much output"
MAX_NEW_ENTRIES = 20_000  # files and folders a run may add to its writable folders
DISK_LIMIT_BYTES = 2 * OUTPUT_LIMIT_BYTES  # disk a run may add to /work, /out (and /tmp)


def private(path: Path, uid: int) -> None:
    """Owned by the sandbox user, no one else may enter (but root)."""
    if os.geteuid() == 0:
        os.chown(path, uid, uid)
    os.chmod(path, 0o700)


def group_readable(path: Path, gid: int) -> None:
    """Owned by root, readable by the sandbox user's own group only (the case)."""
    if os.geteuid() == 0:
        os.chown(path, 0, gid)
        os.chmod(path, 0o750)
    else:  # the planner runs as ourselves
        os.chmod(path, 0o700)


@dataclass
class Usage:
    bytes: int = 0
    entries: int = 0
    too_deep: bool = False  # deeper than allowed, or a path past PATH_MAX
    big_file: bool = False  # a file of OUTPUT_LIMIT_BYTES or more

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.bytes + other.bytes,
            self.entries + other.entries,
            self.too_deep or other.too_deep,
            self.big_file or other.big_file,
        )

    def exceeds(self, base: Usage) -> bool:
        return (
            self.too_deep
            or self.big_file
            or self.bytes - base.bytes > DISK_LIMIT_BYTES
            or self.entries - base.entries > MAX_NEW_ENTRIES
        )


def usage(
    roots: Iterable[Path], stop_after: int | None = None, max_depth: int | None = None
) -> Usage:
    """Disk use under `roots`, without following links; the walk stops at the first
    violation or after `stop_after` entries (the caller's budget is spent by then)."""
    found, todo = Usage(), [(str(root), 0) for root in roots]
    while todo:
        folder, depth = todo.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    st = entry.stat(follow_symlinks=False)
                    found.entries += 1
                    found.bytes += st.st_blocks * 512
                    if stat.S_ISDIR(st.st_mode):
                        found.too_deep |= max_depth is not None and depth >= max_depth
                        todo.append((entry.path, depth + 1))
                    elif stat.S_ISREG(st.st_mode):
                        found.big_file |= st.st_size >= OUTPUT_LIMIT_BYTES
                    if found.too_deep or found.big_file:
                        return found
                    if stop_after is not None and found.entries > stop_after:
                        return found
        except (FileNotFoundError, PermissionError):  # removed (or hidden) while we looked
            continue
        except OSError:  # e.g. a path past PATH_MAX
            found.too_deep = True
            return found
    return found


def copy_tree(source: Path, dest: Path) -> None:
    """A copy with owners, modes, links and times (cp handles any depth and any file type)."""
    proc = subprocess.run(["cp", "-a", "--", str(source), str(dest)], capture_output=True)
    if proc.returncode != 0:
        why = brief(proc.stderr).rpartition(": ")[2]  # the reason, not the judge's own paths
        raise SandboxError(f"the build's output cannot be kept for the cases: {why}")


def remove_tree(path: Path) -> None:
    """Remove a tree the sandbox user wrote: also folders it made unreadable to itself or
    nested deeper than Python's stack (rm walks any depth)."""
    try:
        shutil.rmtree(path)
    except (OSError, RecursionError):
        subprocess.run(["chmod", "-R", "u+rwx", "--", str(path)], capture_output=True)
        subprocess.run(["rm", "-rf", "--", str(path)], capture_output=True)
        if path.exists():
            raise OSError(f"cannot remove {path}") from None
