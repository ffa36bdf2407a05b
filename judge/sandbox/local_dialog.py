"""An `online` allocator's run in the local sandbox: its stdin and stdout are pipes
to the judge (judge.sandbox.dialog), its stderr the log.

The allocator and the judge's talking thread share one core (`dialog.pick_core`): a
request and its answer then hand the core back and forth through the pipe instead of
waking a process on another core each time, which more than doubles the events per
second, and the judge's side takes no core a neighbour could use. A thread watches
the disk use as run_case's loop does; the process group and every process of the
sandbox user are killed at the end, whatever holds the pipes.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING

from judge.sandbox.base import RunOutcome, SandboxError
from judge.sandbox.dialog import EXTRA, Talk, converse, drain, pick_core

if TYPE_CHECKING:
    from judge.sandbox.local import LocalSession


@contextmanager
def pinned(core: int) -> Iterator[None]:
    """The calling thread on `core` alone, for the duration."""
    before = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {core})
    except OSError:
        yield
        return
    try:
        yield
    finally:
        with suppress(OSError):
            os.sched_setaffinity(0, before)


def run_dialog(session: LocalSession, script: bytes, wall_s: float) -> tuple[RunOutcome, Talk]:
    from judge.sandbox.local import _exit_waiter, _kill_group, _limit, kill_user_processes

    argv, env = session._argv_env(session.run_cmd)
    log_path = session.scratch / "log"
    core = pick_core()
    to_child, from_judge = os.pipe()  # (read end, write end) of the allocator's stdin
    from_child, to_judge = os.pipe()

    def child_setup() -> None:
        with suppress(OSError):
            os.sched_setaffinity(0, {core})
        _limit(session.limits, wall_s, session.uid, session.own_network)

    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(log_fd, "wb") as log_file:
        start = time.monotonic()
        deadline = start + wall_s
        try:
            proc = subprocess.Popen(
                argv,
                cwd=session.work,
                env=env,
                stdin=to_child,
                stdout=to_judge,
                stderr=log_file,
                start_new_session=True,
                preexec_fn=child_setup,
            )
        except subprocess.SubprocessError as exc:
            for fd in (to_child, from_judge, from_child, to_judge):
                os.close(fd)
            raise SandboxError(f"the allocator cannot be started isolated: {exc}") from None
        os.close(to_child)
        os.close(to_judge)
        watch = _DiskWatch(session, proc)
        with watch, pinned(core):
            talk = converse(from_judge, from_child, script, deadline)
        timed_out = False
        if not talk.fault:
            with _exit_waiter(proc) as exited:
                timed_out = not exited(max(0.0, deadline - time.monotonic()))
        _kill_group(proc)
        kill_user_processes(session.uid)
        elapsed = time.monotonic() - start
    left = drain(from_child)
    if left and not talk.fault:
        talk.fail(EXTRA, -1, "output after the last answer")
    over = watch.over or session._usage().exceeds(session.base)
    return session._outcome(proc.returncode, elapsed, timed_out, over, log_path), talk


class _DiskWatch:
    """Kills the allocator when its files pass the disk limits (as run_case's loop)."""

    def __init__(self, session: LocalSession, proc: subprocess.Popen[bytes]):
        self.session, self.proc = session, proc
        self.over = False
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _DiskWatch:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()

    def _run(self) -> None:
        from judge.sandbox.local import WATCH_S, _kill_group

        while not self.stop.wait(WATCH_S):
            if self.proc.poll() is not None:
                return
            if self.session._usage().exceeds(self.session.base):
                self.over = True
                _kill_group(self.proc)
                return
