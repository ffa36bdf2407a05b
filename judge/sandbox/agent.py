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
import select
import shutil
import signal
import stat
import subprocess
import sys
import tarfile
import time

LOG = "/tmp/.memorace.log"
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


def run(cmd: list, wall_s: float, output_limit: int) -> dict:
    blocks = output_limit // 512
    script = f'ulimit -t {int(wall_s) + 1}; ulimit -c 0; ulimit -f {blocks}; exec "$@" > {LOG} 2>&1'
    start = time.monotonic()
    proc = subprocess.Popen(
        ["sh", "-c", script, "planner", *cmd],
        cwd="/work",
        stdin=subprocess.DEVNULL,
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


def log_tail(tail_bytes: int) -> tuple:
    try:
        size = os.stat(LOG).st_size
        with open(LOG, "rb") as f:
            f.seek(max(0, size - tail_bytes))
            return size, f.read(tail_bytes)
    except OSError:
        return 0, b""


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
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        request = json.loads(line)
        fresh = bool(request.get("fresh"))
        if fresh:
            scrub()  # cheap when the last case's own scrub ran; needed when it could not
            restore_work()
        header = run(request["cmd"], float(request["wall_s"]), output_limit)
        log_size, tail = log_tail(tail_bytes)
        big, tar = out_tar(output_limit)
        if fresh:
            scrub()  # the case's traces go now, on the clock of the case that left them
        header.update(
            oom=oom_kills(), log_size=log_size, big=big, tail_len=len(tail), tar_len=len(tar)
        )
        out.write(b"MEMORACE " + json.dumps(header).encode() + b"\n" + tail + tar)
        out.flush()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--oom"]:
        print(oom_kills())
    else:
        serve(int(sys.argv[1]), int(sys.argv[2]))
