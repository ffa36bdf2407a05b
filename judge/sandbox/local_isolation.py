"""What the `local` sandbox can isolate on this host, and why a worker must refuse.

Bubblewrap gives a planner its own namespaces (network, files, IPC, processes). Where
it cannot make them (not installed, or a kernel or container without unprivileged
user namespaces), a root judge still takes the network away: each planner process
gets a network namespace of its own (`unshare(CLONE_NEWNET)` before it drops to its
sandbox uid), with only a loopback that is down, so 127.0.0.1 (Redis, PostgreSQL,
the API) is unreachable. It still reads every world-readable file and reaches
world-accessible Unix sockets: a worker judges that way only when the organizer
allows it for development (MEMORACE_ALLOW_UNISOLATED=1), loudly. A non-root judge
without bubblewrap cannot even take the network away: a worker refuses whatever the
setting; the offline `memorace judge` runs with a warning (a contestant's own
planner on her own machine).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from functools import cache

from judge.sandbox.local_uids import PROBE_UID, drop_privileges

CLONE_NEWNET = 0x40000000
ALLOW_SETTING = "MEMORACE_ALLOW_UNISOLATED"
UNISOLATED = "local UNISOLATED"  # the sandbox name a worker and its judgings record (<= 20)
WHY_MAX = 300  # characters of bubblewrap's own error quoted in a refusal
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
# What every real run adds (local.LocalSession), so that the probe fails where a run
# would (a host that refuses a new /proc), and the check that no network is left: the
# new namespace's /proc/net/dev lists two header lines and the loopback only.
RUN_VIEW = ("--proc", "/proc", "--dev", "/dev")
LAST = ("--remount-ro", "/")  # after the mounts (a tmpfs on /tmp), as in a real run
NO_NETWORK = 'test "$(grep -c : /proc/net/dev)" -le 1'
INSTALL = (
    "install bubblewrap (apt-get install bubblewrap) on a host that allows unprivileged "
    "user namespaces (sysctl kernel.unprivileged_userns_clone=1 and "
    "user.max_user_namespaces > 0), or use the docker sandbox (MEMORACE_SANDBOX=docker)"
)

_libc = ctypes.CDLL(None, use_errno=True)  # loaded here: a child after fork only calls it


def one_line(text: str, limit: int = WHY_MAX) -> str:
    """`text` (a tool's stderr) as one printable line of at most `limit` characters."""
    words = "".join(c if c.isprintable() else " " for c in text).split()
    line = " ".join(words)
    return line if len(line) <= limit else line[: limit - 3] + "..."


@cache
def bwrap_problem() -> str:
    """Why bubblewrap cannot isolate a planner here ('' when it can)."""
    if not shutil.which("bwrap"):
        return "bubblewrap (bwrap) is not installed"
    error = _probe()
    return f"bubblewrap cannot create namespaces here ({error})" if error else ""


def bwrap_works() -> bool:
    """Whether bubblewrap is installed and can make namespaces here."""
    return not bwrap_problem()


@cache
def bwrap_sized_tmpfs() -> bool:
    """Whether this bubblewrap makes size-capped tmpfs mounts (--size, from 0.8)."""
    return bwrap_works() and not _probe("--size", "65536", "--tmpfs", "/tmp")


def _probe(*options: str) -> str:
    """bubblewrap's error making a sandbox as a planner's would be made ('' = none)."""
    try:
        probe = subprocess.run(
            ["bwrap", *SYSTEM_VIEW, *RUN_VIEW, *options, *LAST, "/bin/sh", "-c", NO_NETWORK],
            capture_output=True,
            preexec_fn=lambda: drop_privileges(PROBE_UID),
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return one_line(str(exc)) or type(exc).__name__
    if probe.returncode == 0:
        return ""
    said = one_line(probe.stderr.decode(errors="replace"))
    if not said and probe.returncode == 1:  # the check itself: bwrap says why it fails
        return "a planner's sandbox still has a network interface besides loopback"
    return said or f"bwrap exited with status {probe.returncode}"


def own_network() -> None:
    """In a child before exec (still root): a network namespace of its own, empty."""
    if _libc.unshare(CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"unshare(CLONE_NEWNET): {os.strerror(errno)}")


@cache
def network_problem() -> str:
    """Why this process cannot give a planner a network namespace of its own ('')."""
    if os.geteuid() != 0:
        return "the judge does not run as root, so it cannot make a network namespace"
    try:
        subprocess.run(["/bin/true"], preexec_fn=own_network, check=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unshare(CLONE_NEWNET) fails here ({one_line(str(exc))})"
    return ""


def worker_refusal(allow_unisolated: bool) -> str:
    """Why a worker must not judge with the local sandbox here ('' when it may)."""
    why = bwrap_problem()
    if not why:
        return ""
    if no_net := network_problem():
        return (
            f"the local sandbox cannot isolate planners: {why}, and {no_net}: planners "
            f"would reach the network (Redis, PostgreSQL on 127.0.0.1), so even "
            f"{ALLOW_SETTING}=1 does not allow it; {INSTALL}"
        )
    if allow_unisolated:
        return ""
    return (
        f"the local sandbox cannot isolate planners: {why}; {INSTALL}; for development "
        f"only, {ALLOW_SETTING}=1 runs planners without it (no network, but every "
        "world-readable file in reach)"
    )


def recorded_name(sandbox: str) -> str:
    """The sandbox's name as a worker and its judgings record it: the local sandbox
    without bubblewrap is `local UNISOLATED`, for the organizer to see."""
    return UNISOLATED if sandbox == "local" and not bwrap_works() else sandbox


__all__ = [
    "ALLOW_SETTING",
    "SYSTEM_VIEW",
    "UNISOLATED",
    "bwrap_problem",
    "bwrap_sized_tmpfs",
    "bwrap_works",
    "network_problem",
    "one_line",
    "own_network",
    "recorded_name",
    "worker_refusal",
]
