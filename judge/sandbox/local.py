"""The `local` sandbox: a child process with rlimits, as an unprivileged user,
inside bubblewrap namespaces where bubblewrap is installed.

It is weaker than `docker` (no cgroup memory accounting, no CPU quota) and
says so. Without bubblewrap it is weaker still: the planner shares the
network and sees every file that is readable by its user.

Every case starts from the state right after the build: the working folder is
copied after the build to a place the planner never sees (outside its
namespaces, in a folder only root may enter) and restored from there before
each case; /tmp (also HOME and TMPDIR) and /out start empty, and each run gets
fresh namespaces (IPC, /dev/shm). Without bubblewrap only the working folder,
/tmp and /out are reset: what a planner writes elsewhere may survive.
"""

from __future__ import annotations

import logging
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from functools import cache
from pathlib import Path

from judge.package import Limits
from judge.sandbox.base import (
    LOG_TAIL_BYTES,
    OUTPUT_LIMIT_BYTES,
    RunOutcome,
    SandboxError,
    brief,
    tail,
)

log = logging.getLogger("memorace.sandbox")
# Each session runs as its own uid from this range (no passwd entry needed): a uid that
# owns nothing, whose processes can all be killed without touching a concurrent judging.
SANDBOX_UID_BASE = int(os.environ.get("MEMORACE_SANDBOX_UID_BASE", "1200000"))
SANDBOX_UID_COUNT = 100_000
PROBE_UID = 65534
MAX_PROCESSES = 64
SYSTEM_PATH = "/usr/bin:/bin"  # system tools only: never the judge's own interpreters
# What a planner sees of the host under bubblewrap: Debian's merged /usr, read-only.
SYSTEM_VIEW = (
    "--unshare-all",
    "--ro-bind", "/usr", "/usr",
    "--ro-bind", "/etc/alternatives", "/etc/alternatives",
    "--symlink", "usr/bin", "/bin",
    "--symlink", "usr/lib", "/lib",
    "--symlink", "usr/lib64", "/lib64",
    "--symlink", "usr/sbin", "/sbin",
)  # fmt: skip
MEMORY_HINTS = ("MemoryError", "std::bad_alloc", "Cannot allocate memory", "out of memory")


@cache
def bwrap_works() -> bool:
    """Whether bubblewrap is installed and can make namespaces here."""
    if not shutil.which("bwrap"):
        return False
    probe = subprocess.run(
        ["bwrap", *SYSTEM_VIEW, "/bin/true"],
        capture_output=True,
        preexec_fn=lambda: _drop_privileges(PROBE_UID),
        check=False,
    )
    return probe.returncode == 0


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
        if not bwrap_works():
            log.warning(
                "local sandbox WITHOUT bubblewrap: planners share the network and can read "
                "every world-readable file; install bubblewrap or use the docker sandbox",
            )
        scratch = Path(tempfile.mkdtemp(prefix="memorace-local-"))
        uid = _fresh_uid()
        try:
            yield LocalSession(scratch, submission_root, build, run, limits, uid)
        finally:
            _kill_user_processes(uid)
            with suppress(OSError):
                _remove_tree(scratch)


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
            d.mkdir()
        os.chmod(scratch, 0o755)
        os.chmod(self.sealed.parent, 0o700)  # the sandbox user cannot enter it
        for d in (self.work, self.out_dir, self.tmp):
            _give_to_sandbox_user(d, self.uid)
        self.namespaced = bwrap_works()

    def build(self, timeout_s: float) -> RunOutcome | None:
        built = self._exec(self.build_cmd, timeout_s, cpu_s=timeout_s) if self.build_cmd else None
        if built is not None and (built.exit_code != 0 or built.timed_out):
            return built
        try:
            _copy_tree(self.work, self.sealed)  # no process of the build is left
        except SandboxError as exc:  # e.g. a file the build made unreadable (no root)
            return RunOutcome(1, built.time_s if built else 0.0, log=str(exc))
        return built

    def run_case(self, time_limit_s: float) -> RunOutcome:
        if not self.sealed.exists():
            _copy_tree(self.work, self.sealed)
        for d in (self.out_dir, self.tmp):
            _remove_tree(d)
            d.mkdir()
            _give_to_sandbox_user(d, self.uid)
        _remove_tree(self.work)
        _copy_tree(self.sealed, self.work)
        return self._exec(self.run_cmd, time_limit_s, cpu_s=time_limit_s)

    def _exec(self, cmd: list[str], wall_s: float, cpu_s: float) -> RunOutcome:
        argv, env = self._argv_env(cmd)
        log_path = self.scratch / "log"
        with log_path.open("wb") as log_file:
            start = time.monotonic()
            proc = subprocess.Popen(
                argv,
                cwd=self.work,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=lambda: _limit(self.limits, cpu_s, self.uid),
            )
            timed_out = False
            try:
                proc.wait(timeout=wall_s)
            except subprocess.TimeoutExpired:
                timed_out = True
            _kill_group(proc)
            _kill_user_processes(self.uid)  # anything that left the process group
            elapsed = time.monotonic() - start
        return self._outcome(proc.returncode, elapsed, timed_out, log_path)

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
            "--bind",
            str(self.tmp),
            "/tmp",
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

    def _outcome(self, code: int, elapsed: float, timed_out: bool, log_path: Path) -> RunOutcome:
        size = log_path.stat().st_size
        with log_path.open("rb") as fh:
            fh.seek(max(0, size - LOG_TAIL_BYTES))
            text = tail(fh.read())
        if self.namespaced and code > 128:  # bubblewrap reports a signal death as 128 + signal
            code = -(code - 128)
        too_much = (
            size >= OUTPUT_LIMIT_BYTES or code == -signal.SIGXFSZ or _any_file_too_big(self.out_dir)
        )
        memory = not timed_out and code != 0 and any(h in text for h in MEMORY_HINTS)
        return RunOutcome(
            None if timed_out else code,
            elapsed,
            timed_out,
            memory,
            too_much and not timed_out,
            text,
        )


def _fresh_uid() -> int:
    """A uid no other live session uses (pid and a counter spread over the range)."""
    global _SESSIONS
    _SESSIONS += 1
    return SANDBOX_UID_BASE + (os.getpid() * 64 + _SESSIONS) % SANDBOX_UID_COUNT


_SESSIONS = 0


def session_uids() -> set[int]:
    """Every uid this judge process has given a session so far (for leak checks)."""
    pid = os.getpid()
    return {SANDBOX_UID_BASE + (pid * 64 + k) % SANDBOX_UID_COUNT for k in range(1, _SESSIONS + 1)}


def _limit(limits: Limits, cpu_s: float, uid: int) -> None:
    """In the child, before exec: rlimits, then an unprivileged user."""
    cpu = int(cpu_s) + 1
    memory = limits.memory_limit_mb * 2**20
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (OUTPUT_LIMIT_BYTES, OUTPUT_LIMIT_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _drop_privileges(uid)


def _drop_privileges(uid: int) -> None:
    if os.geteuid() == 0:  # run as a user that owns nothing; NPROC then counts only its own
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        resource.setrlimit(resource.RLIMIT_NPROC, (MAX_PROCESSES, MAX_PROCESSES))


def _give_to_sandbox_user(path: Path, uid: int) -> None:
    if os.geteuid() == 0:
        os.chown(path, uid, uid)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _kill_user_processes(uid: int) -> None:
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


def _copy_tree(source: Path, dest: Path) -> None:
    """A copy with owners, modes, links and times (cp handles any depth and any file type)."""
    proc = subprocess.run(["cp", "-a", "--", str(source), str(dest)], capture_output=True)
    if proc.returncode != 0:
        why = brief(proc.stderr).rpartition(": ")[2]  # the reason, not the judge's own paths
        raise SandboxError(f"the build's output cannot be kept for the cases: {why}")


def _remove_tree(path: Path) -> None:
    """Remove a tree the sandbox user wrote: also folders it made unreadable to itself or
    nested deeper than Python's stack (rm walks any depth)."""
    try:
        shutil.rmtree(path)
    except (OSError, RecursionError):
        subprocess.run(["chmod", "-R", "u+rwx", "--", str(path)], capture_output=True)
        subprocess.run(["rm", "-rf", "--", str(path)], capture_output=True)
        if path.exists():
            raise OSError(f"cannot remove {path}") from None


def _any_file_too_big(directory: Path) -> bool:
    return any(p.is_file() and p.stat().st_size >= OUTPUT_LIMIT_BYTES for p in directory.rglob("*"))
