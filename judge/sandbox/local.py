"""The `local` sandbox: a child process with rlimits, as an unprivileged user,
inside bubblewrap namespaces where bubblewrap is installed.

It is weaker than `docker` (no cgroup memory accounting, no CPU quota) and
says so. Without bubblewrap it is weaker still: the planner sees every file that
is readable by its user (local_isolation says when a worker may judge so).

Every case starts from the state right after the build: the working folder is
copied after the build to a place the planner never sees (outside its
namespaces, in a folder only root may enter) and restored from there before
each case; /tmp (also HOME and TMPDIR) and /out start empty, and each run gets
fresh namespaces (IPC, /dev/shm). Without bubblewrap only the working folder,
/tmp and /out are reset: what a planner writes elsewhere may survive.

Without bubblewrap a root judge gives each planner a network namespace of its own
(no network at all) and a worker judges so only with MEMORACE_ALLOW_UNISOLATED=1
(local_isolation: a worker refuses to start otherwise).

Disk: /tmp is a tmpfs of TMP_BYTES (bubblewrap >= 0.8); /work, /out (and /tmp on an
older bubblewrap or none) are host folders, watched while the planner runs: past
DISK_LIMIT_BYTES more, MAX_NEW_ENTRIES more entries, folders in /out nested past
MAX_OUT_DEPTH, a path past PATH_MAX, or one file of OUTPUT_LIMIT_BYTES (also
RLIMIT_FSIZE), it is killed for too much output (the walks are iterative and bounded).

Other users of the host: the session folder is 0711, the case folder root's and the
sandbox group's only (0750), /work, /out and /tmp the sandbox user's only (0700).
"""

from __future__ import annotations

import logging
import os
import resource
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from judge.package import Limits
from judge.sandbox.base import LOG_TAIL_BYTES, OUTPUT_LIMIT_BYTES, RunOutcome, SandboxError, tail
from judge.sandbox.cores import join_cpuset
from judge.sandbox.dialog import Talk
from judge.sandbox.local_fs import (
    MAX_NEW_ENTRIES,
    MAX_OUT_DEPTH,
    Usage,
    copy_tree,
    group_readable,
    private,
    remove_tree,
    usage,
)
from judge.sandbox.local_isolation import (
    SYSTEM_VIEW,
    bwrap_problem,
    bwrap_sized_tmpfs,
    bwrap_works,
    own_network,
)
from judge.sandbox.local_toolchain import host_toolchain
from judge.sandbox.local_uids import drop_privileges, kill_user_processes, lease_uid, session_uids

log = logging.getLogger("memorace.sandbox")
TMP_BYTES = OUTPUT_LIMIT_BYTES  # the /tmp tmpfs, as in the docker sandbox
WATCH_S = 0.05  # how often the disk use of a running planner is looked at
SYSTEM_PATH = "/usr/bin:/bin"  # system tools only: never the judge's own interpreters
MEMORY_HINTS = ("MemoryError", "std::bad_alloc", "Cannot allocate memory", "out of memory")


def _warn_unisolated(why: str) -> None:
    """Once per session (one judging): loud in every judging's log."""
    if os.geteuid() == 0:
        log.warning(
            "local sandbox UNISOLATED (development only, MEMORACE_ALLOW_UNISOLATED=1): %s; "
            "planners have no network (a namespace of their own) but can read every "
            "world-readable file and reach world-writable Unix sockets",
            why,
        )
    else:  # the offline judge of a contestant's own planner (a worker refuses this)
        log.warning(
            "local sandbox WITHOUT isolation (%s, not root): the planner shares the network "
            "and can read every file of this user; install bubblewrap or use the docker "
            "sandbox",
            why,
        )


class LocalSandbox:
    name = "local"

    @contextmanager
    def session(
        self,
        submission_root: Path,
        build: list[str] | None,
        run: list[str],
        limits: Limits,
        gpu_slot: int | None = None,
    ) -> Iterator[LocalSession]:
        if why := bwrap_problem():
            _warn_unisolated(why)
        with lease_uid() as uid:
            scratch = Path(tempfile.mkdtemp(prefix="memorace-local-"))
            try:
                yield LocalSession(scratch, submission_root, build, run, limits, uid)
            finally:
                kill_user_processes(uid)
                with suppress(OSError):
                    remove_tree(scratch)


class LocalSession:
    def __init__(
        self,
        scratch: Path,
        root: Path,
        build: list[str] | None,
        run: list[str],
        limits: Limits,
        uid: int,
    ):
        self.scratch, self.build_cmd, self.run_cmd, self.limits = scratch, build, run, limits
        self.uid = uid
        self.case_dir, self.out_dir = scratch / "case", scratch / "out"
        self.work, self.tmp = scratch / "work", scratch / "tmp"
        self.sealed = scratch / "sealed" / "work"  # the work folder right after the build
        shutil.copytree(root, self.work)
        for d in (self.case_dir, self.out_dir, self.tmp, self.sealed.parent):
            d.mkdir(mode=0o700)  # sealed: the sandbox user cannot enter it
        os.chmod(scratch, 0o711)  # others may pass (bwrap's arguments name it), not look
        group_readable(self.case_dir, uid)
        for d in (self.work, self.out_dir, self.tmp):
            private(d, uid)
        self.namespaced = bwrap_works()
        # Without bubblewrap a root judge still takes the network away (non-root cannot).
        self.own_network = not self.namespaced and os.geteuid() == 0
        self.tmpfs = bwrap_sized_tmpfs()  # else /tmp is a watched host folder
        self.base = usage([self.work])  # what the submission itself holds

    def build(self, timeout_s: float) -> RunOutcome | None:
        built = self._exec(self.build_cmd, timeout_s, cpu_s=timeout_s) if self.build_cmd else None
        if built is not None and (built.exit_code != 0 or built.timed_out):
            return built
        try:
            copy_tree(self.work, self.sealed)  # no process of the build is left
        except SandboxError as exc:  # e.g. a file the build made unreadable (no root)
            return RunOutcome(1, built.time_s if built else 0.0, log=str(exc))
        self.base = usage([self.work])  # each case starts from this /work, /out and /tmp empty
        return built

    def build_identity(self) -> str | None:
        # Without root and bubblewrap a planner runs as the judge itself: it could write
        # into the cache, so nothing built here is kept.
        if not self.namespaced and os.geteuid() != 0:
            return None
        toolchain = host_toolchain()
        return None if toolchain is None else f"local:{int(self.namespaced)}:{toolchain}"

    def export_build(self, dest: Path) -> dict[str, Any]:
        if not self.sealed.exists():
            raise SandboxError("nothing was built")
        copy_tree(self.sealed, dest)
        return {"uid": self.uid}

    def restore_build(self, payload: Path, meta: dict[str, Any]) -> None:
        """The kept tree becomes /work as built (each case restores /work from it); what
        the build's uid owned is this session's uid's."""
        built_by = meta.get("uid")
        if type(built_by) is not int:
            raise SandboxError("the kept build does not say its owner")
        try:
            copy_tree(payload, self.sealed)
            if os.geteuid() == 0 and built_by != self.uid:
                owner = f"--from={built_by}:{built_by}", f"{self.uid}:{self.uid}"
                subprocess.run(["chown", "-R", "-h", *owner, "--", str(self.sealed)], check=True)
        except (OSError, subprocess.CalledProcessError) as exc:
            with suppress(OSError):
                remove_tree(self.sealed)
            raise SandboxError(f"the kept build cannot be restored: {exc}") from None
        self.base = usage([self.sealed])

    def run_case(self, time_limit_s: float) -> RunOutcome:
        self._fresh()
        return self._exec(self.run_cmd, time_limit_s, cpu_s=time_limit_s)

    def run_dialog(self, script: bytes, time_limit_s: float) -> tuple[RunOutcome, Talk]:
        from judge.sandbox.local_dialog import run_dialog

        self._fresh()
        return run_dialog(self, script, time_limit_s)

    def _fresh(self) -> None:
        """/work as the build left it, /out and /tmp empty."""
        if not self.sealed.exists():
            copy_tree(self.work, self.sealed)
        for d in (self.out_dir, self.tmp):
            remove_tree(d)
            d.mkdir(mode=0o700)
            private(d, self.uid)
        remove_tree(self.work)
        copy_tree(self.sealed, self.work)
        private(self.work, self.uid)  # the build may have opened it to everyone

    def _exec(self, cmd: list[str], wall_s: float, cpu_s: float) -> RunOutcome:
        argv, env = self._argv_env(cmd)
        log_path = self.scratch / "log"
        log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # not others'
        with open(log_fd, "wb") as log_file:
            start = time.monotonic()
            try:
                proc = subprocess.Popen(
                    argv,
                    cwd=self.work,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log_file,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=lambda: _limit(self.limits, cpu_s, self.uid, self.own_network),
                )
            except subprocess.SubprocessError as exc:  # e.g. no network namespace: never run
                raise SandboxError(f"the planner cannot be started isolated: {exc}") from None
            timed_out, over = self._watch(proc, start + wall_s)
            _kill_group(proc)
            kill_user_processes(self.uid)  # anything that left the process group
            elapsed = time.monotonic() - start
        over = over or self._usage().exceeds(self.base)
        return self._outcome(proc.returncode, elapsed, timed_out, over, log_path)

    def _watch(self, proc: subprocess.Popen[bytes], deadline: float) -> tuple[bool, bool]:
        """Wait for the planner's exit: (timed out, killed for its disk use)."""
        with _exit_waiter(proc) as exited:
            while (left := deadline - time.monotonic()) > 0:
                if exited(min(left, WATCH_S)):
                    return False, False
                if self._usage().exceeds(self.base):
                    return False, True
        return True, False

    def _usage(self) -> Usage:
        """What the planner's writable folders hold (the walk stops past the budget)."""
        budget = self.base.entries + MAX_NEW_ENTRIES
        out = usage([self.out_dir], budget, max_depth=MAX_OUT_DEPTH)
        if out.exceeds(self.base):
            return out
        return out + usage([self.work] + ([] if self.tmpfs else [self.tmp]), budget - out.entries)

    def _argv_env(self, cmd: list[str]) -> tuple[list[str], dict[str, str]]:
        env = {"PATH": SYSTEM_PATH, "LANG": "C.UTF-8", "OMP_NUM_THREADS": str(self.limits.cpus)}
        if not self.namespaced:
            dirs = {"case": self.case_dir, "out": self.out_dir, "tmp": self.tmp}
            env |= {"HOME": str(self.tmp), "TMPDIR": str(self.tmp)}
            env |= {"MEMORACE_CASE_DIR": str(dirs["case"]), "MEMORACE_OUT_DIR": str(dirs["out"])}
            return cmd, env
        env |= {
            "HOME": "/tmp",
            "TMPDIR": "/tmp",
            "MEMORACE_CASE_DIR": "/case",
            "MEMORACE_OUT_DIR": "/out",
        }
        jail = [
            "bwrap",
            *SYSTEM_VIEW,
            "--die-with-parent",
            "--new-session",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--ro-bind",
            str(self.case_dir),
            "/case",
            "--bind",
            str(self.out_dir),
            "/out",
            *_tmp_mount(self.tmp, self.tmpfs),
            "--bind",
            str(self.work),
            "/work",
            "--chdir",
            "/work",
            "--remount-ro",
            "/",  # the sandbox's own root: nothing outside /out, /tmp and /work is writable
            "--",
        ]
        return jail + cmd, env

    def _outcome(
        self, code: int, elapsed: float, timed_out: bool, over: bool, log_path: Path
    ) -> RunOutcome:
        size = log_path.stat().st_size
        with log_path.open("rb") as fh:
            fh.seek(max(0, size - LOG_TAIL_BYTES))
            text = tail(fh.read())
        if self.namespaced and code > 128:  # bubblewrap reports a signal death as 128 + signal
            code = -(code - 128)
        too_much = size >= OUTPUT_LIMIT_BYTES or code == -signal.SIGXFSZ or over
        memory = not timed_out and code != 0 and any(h in text for h in MEMORY_HINTS)
        return RunOutcome(
            None if timed_out else code,
            elapsed,
            timed_out,
            memory,
            too_much and not timed_out,
            text,
        )


def _tmp_mount(host_tmp: Path, tmpfs: bool) -> list[str]:
    if tmpfs:
        return ["--size", str(TMP_BYTES), "--tmpfs", "/tmp"]
    return ["--bind", str(host_tmp), "/tmp"]


@contextmanager
def _exit_waiter(proc: subprocess.Popen[bytes]) -> Iterator[Callable[[float], bool]]:
    """A wait(seconds) -> exited: a pidfd wakes at the exit itself (no polling delay)."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):

        def wait(seconds: float) -> bool:
            try:
                proc.wait(timeout=seconds)
                return True
            except subprocess.TimeoutExpired:
                return False

        yield wait
        return
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    try:
        yield lambda seconds: bool(poller.poll(seconds * 1000))
    finally:
        os.close(fd)


def _limit(limits: Limits, cpu_s: float, uid: int, no_network: bool) -> None:
    """In the child, before exec: its own network namespace (as root, when bubblewrap
    makes none), rlimits, then an unprivileged user."""
    if no_network:
        own_network()
    join_cpuset()  # its slot's cores bind it (judge.sandbox.cores), not just its affinity
    cpu = int(cpu_s) + 1
    memory = limits.memory_limit_mb * 2**20
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (OUTPUT_LIMIT_BYTES, OUTPUT_LIMIT_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    drop_privileges(uid)
    # Last: the child is a copy of the judge, whose address space may pass the limit
    # already; any allocation after this (Python's, in the lines above) could fail.
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


__all__ = ["LocalSandbox", "LocalSession", "bwrap_sized_tmpfs", "bwrap_works", "session_uids"]
