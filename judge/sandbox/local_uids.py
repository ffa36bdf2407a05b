"""Sandbox users of the local sandbox: one uid per session, never shared by two live
sessions on this host, and the means to become it and to kill everything it runs.

A uid is leased with an exclusive flock on a file named after it in a root-owned lock
folder: concurrent judging processes skip each other's uids, and a crashed judge's
leases go with it (the kernel drops its locks).
"""

from __future__ import annotations

import fcntl
import os
import random
import resource
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from judge.sandbox.base import SandboxError

# Uids with no passwd entry: they own nothing, so all their processes can be killed.
SANDBOX_UID_BASE = int(os.environ.get("MEMORACE_SANDBOX_UID_BASE") or "1200000")
SANDBOX_UID_COUNT = 100_000
PROBE_UID = 65534
MAX_PROCESSES = 64
LOCK_TRIES = 1000

_given: set[int] = set()


def session_uids() -> set[int]:
    """Every uid this judge process has leased so far (for leak checks)."""
    return set(_given)


def lock_dir() -> Path:
    """Shared by every judging process of this host (root only: no one else may squat)."""
    if env := os.environ.get("MEMORACE_SANDBOX_UID_LOCKS"):
        return Path(env)
    return Path("/run" if os.path.isdir("/run") else "/tmp") / "memorace-sandbox-uids"


@contextmanager
def lease_uid() -> Iterator[int]:
    """A uid no other live session on this host holds, for the duration of the block."""
    if os.geteuid() != 0:  # no switching without root: the uid is a label only
        uid = SANDBOX_UID_BASE + random.randrange(SANDBOX_UID_COUNT)
        _given.add(uid)
        yield uid
        return
    folder = _checked_lock_dir()
    start = random.randrange(SANDBOX_UID_COUNT)
    for k in range(LOCK_TRIES):
        uid = SANDBOX_UID_BASE + (start + k) % SANDBOX_UID_COUNT
        fd = os.open(folder / str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            kill_user_processes(uid)  # a crashed judge's planner may outlive its lease
            _given.add(uid)
            yield uid
        finally:
            os.close(fd)  # releases the lock
        return
    raise SandboxError(f"no free sandbox uid after {LOCK_TRIES} tries")


def _checked_lock_dir() -> Path:
    folder = lock_dir()
    with suppress(FileExistsError):
        folder.mkdir(mode=0o700, parents=True)
    st = folder.lstat()
    if not folder.is_dir() or folder.is_symlink() or st.st_uid != 0 or st.st_mode & 0o022:
        raise SandboxError(f"{folder} must be a folder owned by root, writable by root only")
    return folder


def drop_privileges(uid: int) -> None:
    """In a child before exec: become `uid` (its own group, no others) when root."""
    if os.geteuid() == 0:  # run as a user that owns nothing; NPROC then counts only its own
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        resource.setrlimit(resource.RLIMIT_NPROC, (MAX_PROCESSES, MAX_PROCESSES))


def kill_user_processes(uid: int) -> None:
    """Kill every process of the session's own uid (only when we could switch to it)."""
    if os.geteuid() != 0:
        return
    for _ in range(3):  # a fork bomb may fork while we kill
        pids = _pids_of(uid)
        if not pids:
            return
        for pid in pids:
            with suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def _pids_of(uid: int) -> list[int]:
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    pids.append(int(entry.name))
            except FileNotFoundError:
                pass
    return pids
