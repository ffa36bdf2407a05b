"""The supervisor that runs inside a docker sandbox for a whole judging.

It is started once per container through one `docker exec` (as the planner
user, `python3 -I -c <this file>`) and then runs each build and case on a
request line from the judge, so a case costs no engine round trip. It only
uses the standard library: the runner image is any Python 3.

Protocol (stdin / stdout of the exec):
  request  one JSON line {"cmd": [...], "wall_s": float, "fresh": bool}; with "fresh"
           the run starts from the state right after the build: every place the
           planner user can write (/tmp, /out, /dev/shm, /dev/mqueue, SysV IPC, /work)
           is emptied and /work is restored from /built, the root-owned copy of /work
           that the judge made after the build (the planner cannot change it); after
           the run (and its answer's files are read) they are emptied again
  response b"MEMORACE " + JSON header line, then `tail_len` bytes of log tail,
           then `tar_len` bytes: a tar of the regular files at the top of /out

  dialog   with "dialog": N in the request, N bytes of an `online` script follow the
           line; the command runs with pipes as stdin and stdout and dialog.py's
           converse talks to it (stderr is the log); the header's "talk" is the
           dialog's summary and the tar is replaced by the answers, one decimal per line

Hardening: the agent makes itself non-dumpable, so the planner (same uid)
cannot ptrace it or read its pipes through /proc; the planner can still kill
or stop it, which the judge notices (no answer in time) and falls back to a
fresh agent. Each planner gets oom_score_adj 1000 so the OOM killer picks it.
"""

import contextlib
import ctypes
import io
import json
import os
import resource
import select
import shutil
import signal
import stat
import subprocess
import sys
import tarfile
import time

if "converse" not in globals():  # run from the judge's own tree (tests), not as AGENT_SOURCE
    from judge.sandbox.dialog import EXTRA, converse, drain, pick_core

OUT = "/out"
WORK, BUILT = "/work", "/built"
SCRATCH = ("/tmp", OUT, "/dev/shm", "/dev/mqueue")  # emptied before and after each case
IPC_RMID = 0
PR_SET_DUMPABLE = 4
LIBC = ctypes.CDLL(None)
OOM_FILES = ("/sys/fs/cgroup/memory/memory.oom_control", "/sys/fs/cgroup/memory.events")


def oom_kills() -> int:
    for path in OOM_FILES:
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith("oom_kill "):
                        return int(line.split()[1])
        except OSError:
            continue
    return 0


def planner_child() -> None:
    # Dumpable again first: /proc/self of a non-dumpable process belongs to root.
    LIBC.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as f:
        f.write("1000")


def exited_within(proc: subprocess.Popen, wall_s: float) -> bool:
    # A pidfd wakes us the moment the planner exits (Popen.wait(timeout) polls
    # with sleeps of up to 50 ms, which would be most of a small case's cost).
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:
            proc.wait(timeout=wall_s)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(wall_s * 1000))
    finally:
        os.close(fd)


def kill_all() -> None:
    """SIGKILL every process of the planner user but this one."""
    with contextlib.suppress(ProcessLookupError):  # none left
        os.kill(-1, signal.SIGKILL)


def new_log() -> int:
    """The log of one run: a fresh file whose name is removed at once, so the planner can
    neither replace it (a FIFO would stop this agent reading it) nor reopen it; its bytes
    still count in /tmp and against the file size limit."""
    while True:
        name = f"/tmp/.memorace-log-{os.urandom(8).hex()}"
        try:
            fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            continue
        os.unlink(name)
        return fd


def run(cmd: list, wall_s: float, output_limit: int, log: int) -> dict:
    blocks = output_limit // 512
    script = f'ulimit -t {int(wall_s) + 1}; ulimit -c 0; ulimit -f {blocks}; exec "$@"'
    start = time.monotonic()
    proc = subprocess.Popen(
        ["sh", "-c", script, "planner", *cmd],
        cwd="/work",
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        start_new_session=True,
        preexec_fn=planner_child,
    )
    timed_out = not exited_within(proc, wall_s)
    if timed_out:
        kill_all()
    code = proc.wait()
    elapsed = time.monotonic() - start
    kill_all()
    return {"code": None if timed_out else code, "time_s": elapsed, "timed_out": timed_out}


def run_dialog(cmd: list, wall_s: float, output_limit: int, log: int, script: bytes, core) -> tuple:
    """(header, answers): the allocator and this agent share one core (see local_dialog)."""
    blocks = output_limit // 512
    ulimits = f"ulimit -t {int(wall_s) + 1}; ulimit -c 0; ulimit -f {blocks}"
    core = pick_core(core)
    to_child, from_judge = os.pipe()
    from_child, to_judge = os.pipe()

    def child() -> None:
        os.sched_setaffinity(0, {core})
        planner_child()

    start = time.monotonic()
    proc = subprocess.Popen(
        ["sh", "-c", ulimits + '; exec "$@"', "planner", *cmd],
        cwd="/work",
        stdin=to_child,
        stdout=to_judge,
        stderr=log,
        start_new_session=True,
        preexec_fn=child,
    )
    os.close(to_child)
    os.close(to_judge)
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {core})
    try:
        talk = converse(from_judge, from_child, script, start + wall_s)
    finally:
        os.sched_setaffinity(0, before)
    timed_out = False
    if not talk.fault:
        timed_out = not exited_within(proc, max(0.0, start + wall_s - time.monotonic()))
    kill_all()
    code = proc.wait()
    elapsed = time.monotonic() - start
    kill_all()
    if drain(from_child) and not talk.fault:
        talk.fail(EXTRA, -1, "output after the last answer")
    header = {"code": None if timed_out else code, "time_s": elapsed, "timed_out": timed_out}
    header["talk"] = talk.summary()
    header["tmp_full"] = tmp_full()
    return header, "\n".join(map(str, talk.answers)).encode()


def tmp_full() -> bool:
    """/tmp (a tmpfs holding the log) is full: a flood that ENOSPC stopped short of the
    file size limit is still too much output."""
    try:
        st = os.statvfs("/tmp")
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < 64 * 1024


def log_tail(log: int, tail_bytes: int) -> tuple:
    size = os.fstat(log).st_size
    start = max(0, size - tail_bytes)
    return size, os.pread(log, size - start, start)


def settings() -> tuple:
    """What a planner (the same user) can change in this agent and every later planner
    would inherit: priority, rlimits, CPU affinity and scheduling policy."""
    limits = tuple(
        resource.getrlimit(getattr(resource, n)) for n in sorted(dir(resource))
        if n.startswith("RLIMIT_")
    )  # fmt: skip
    policy = os.sched_getscheduler(0)
    return os.getpriority(os.PRIO_PROCESS, 0), limits, os.sched_getaffinity(0), policy


def out_tar(output_limit: int) -> tuple:
    """(a file reached the size limit, tar bytes of the regular top-level files of /out)."""
    buf, big = io.BytesIO(), False
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in sorted(os.listdir(OUT)):
            path = os.path.join(OUT, name)
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):  # fdopen of a folder would raise
                os.close(fd)
                continue
            with os.fdopen(fd, "rb") as f:
                if st.st_size >= output_limit:
                    big = True
                    continue
                info = tarfile.TarInfo(name)
                info.size = st.st_size
                tar.addfile(info, f)
    return big, buf.getvalue()


def clear(top: str) -> None:
    """Empty `top`. Everything in it belongs to the planner user (it is the only one that
    writes there) and none of its processes is left, so nothing can resist or race."""
    try:
        _clear(top)
    except Exception:  # a path too deep or too long for the fast way
        script = 'chmod -R u+rwx -- "$0"; rm -rf -- "$0"/* "$0"/.[!.]* "$0"/..?*'
        subprocess.run(
            ["sh", "-c", script + " 2>/dev/null; true", top],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )


def _clear(top: str) -> None:
    todo, dirs = [top], []
    while todo:  # no recursion: a planner may nest folders deeper than Python's stack
        folder = todo.pop()
        if folder != top:
            os.chmod(folder, 0o700)  # its owner may have taken its own access away
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    todo.append(entry.path)
                    dirs.append(entry.path)
                else:
                    os.unlink(entry.path)
    for folder in reversed(dirs):  # a folder is listed after its parent
        os.rmdir(folder)


def remove_ipc() -> None:
    """SysV shared memory, semaphores and message queues outlive processes: remove them."""
    for kind, remove in (
        ("shm", lambda i: LIBC.shmctl(i, IPC_RMID, None)),
        ("sem", lambda i: LIBC.semctl(i, 0, IPC_RMID)),
        ("msg", lambda i: LIBC.msgctl(i, IPC_RMID, None)),
    ):
        with contextlib.suppress(OSError), open(f"/proc/sysvipc/{kind}") as f:
            for line in list(f)[1:]:
                remove(int(line.split()[1]))


def scrub() -> None:
    """Remove what the planner user can leave behind: processes, files wherever it can
    write (/work included), SysV IPC objects."""
    kill_all()
    for top in SCRATCH:
        if os.path.isdir(top):
            clear(top)
    remove_ipc()
    os.chmod(WORK, 0o755)  # its owner may have taken its own access away
    clear(WORK)


def restore_work() -> None:
    """/work (empty) as the build left it: a copy of the judge's /built."""
    try:
        shutil.copytree(BUILT, WORK, symlinks=True, dirs_exist_ok=True)
    except Exception:  # a fifo or a tree too deep for copytree: cp copies any of them
        clear(WORK)
        subprocess.run(
            ["cp", "-R", "--preserve=mode,timestamps,links", BUILT + "/.", WORK + "/"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
        )


def serve(output_limit: int, tail_bytes: int) -> None:
    LIBC.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    out, inp = sys.stdout.buffer, sys.stdin.buffer
    start = settings()
    while line := inp.readline():
        request = json.loads(line)
        fresh = bool(request.get("fresh"))
        if fresh:
            scrub()  # cheap when the last case's own scrub ran; needed when it could not
            restore_work()
        log = new_log()
        cmd, wall_s = request["cmd"], float(request["wall_s"])
        if "dialog" in request:
            script = inp.read(int(request["dialog"]))
            header, body = run_dialog(cmd, wall_s, output_limit, log, script, request.get("core"))
            big = header.pop("tmp_full")
        else:
            header = run(cmd, wall_s, output_limit, log)
        log_size, tail = log_tail(log, tail_bytes)
        os.close(log)
        if "dialog" not in request:
            big, body = out_tar(output_limit)
        if fresh:
            scrub()  # the case's traces go now, on the clock of the case that left them
        header.update(
            oom=oom_kills(), log_size=log_size, big=big, tail_len=len(tail), tar_len=len(body)
        )
        header["tainted"] = settings() != start  # the judge then starts a fresh agent
        out.write(b"MEMORACE " + json.dumps(header).encode() + b"\n" + tail + body)
        out.flush()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--oom"]:
        print(oom_kills())
    else:
        serve(int(sys.argv[1]), int(sys.argv[2]))
