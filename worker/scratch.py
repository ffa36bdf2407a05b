"""Each judging process keeps its scratch folders (submissions, cases, plans in the
making) under one folder of its own, `<tmp>/memorace-worker-<host>-<pid>` (no colon: Docker
reads one in a bind mount as a separator), so that a
worker started later on the same host can tell whose they are: a folder whose process
is dead (SIGKILL, OOM) is an orphan and goes; a live worker's folder stays.
"""

from __future__ import annotations

import os
import socket
import tempfile
from contextlib import suppress
from pathlib import Path

from judge.sandbox.base import process_alive
from judge.sandbox.local_fs import remove_tree

PREFIX = "memorace-worker-"
SYSTEM_TMP = Path(tempfile.gettempdir())  # before enter() points tempfile elsewhere


def folder_for(host: str, pid: int, base: Path = SYSTEM_TMP) -> Path:
    return base / f"{PREFIX}{host}-{pid}"


def enter() -> Path:
    """Make this process's scratch folder (once per process) the default of `tempfile`.

    Traversable but not listable by others (0711): a sandbox's own folder inside it
    is opened to its planner user by the sandbox. The umask is the usual 022 here,
    for the same reason: case files must be readable by that user (the data
    directory, 0700, keeps everything below it private whatever the umask)."""
    folder = folder_for(socket.gethostname(), os.getpid())
    if tempfile.tempdir != str(folder):
        folder.mkdir(mode=0o711, exist_ok=True)
        folder.chmod(0o711)
        tempfile.tempdir = str(folder)
    os.umask(0o022)
    return folder


def leave() -> None:
    """At a clean exit: the process's folder goes with it."""
    folder = folder_for(socket.gethostname(), os.getpid())
    with suppress(OSError):
        remove_tree(folder)
    if tempfile.tempdir == str(folder):
        tempfile.tempdir = None


def remove_orphans(base: Path = SYSTEM_TMP) -> int:
    """Remove the scratch folders of dead judging processes of this host."""
    host, removed = socket.gethostname(), 0
    for path in base.glob(f"{PREFIX}*"):
        owner_host, _, pid = path.name[len(PREFIX) :].rpartition("-")
        if owner_host != host or not pid.isdigit() or process_alive(int(pid)) or not path.is_dir():
            continue
        with suppress(OSError):  # deeper than Python's stack too: rm walks any depth
            remove_tree(path)
        removed += 1
    return removed
