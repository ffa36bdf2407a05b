"""Worker slots own whole cores, so that a planner's time does not depend on its
neighbours: a judging process claims cores of its host for as long as it lives and
runs on them alone, with its planners (the local sandbox's children inherit the
affinity; a docker sandbox gets them as the container's cpuset) and its own work
(building, verifying) between their runs.

Claims are `flock`s on one file per core in a folder every worker of the host sees
(the system temporary folder: TMPDIR, shared by the compose stack's workers), so that
workers started in any order, in processes or containers, take different cores, and
a dead worker's cores are free again the moment it dies (the kernel drops its locks).
When the cores run out a worker runs unpinned and says so: start at most one worker
per `MEMORACE_SLOT_CORES` cores (scripts/serve's MEMORACE_WORKERS=auto does).

An affinity is only a wish: any process may widen its own. Docker's cpuset binds; in
the local sandbox a planner joins a cpuset cgroup of its slot's cores (`join_cpuset`,
as root, cgroup v1 or v2 with the cpuset controller) so that widening gets it nothing;
without one (no root, no cgroup file system) the local sandbox's pinning is a wish.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from contextlib import suppress
from pathlib import Path

LOCK_DIR = "memorace-cores"


class CoreSpecError(ValueError):
    """A core list that names no core, or cores this process may not use."""


def parse_cpulist(text: str) -> frozenset[int]:
    """Linux's cpu-list syntax, "0-3,6": the cores it names."""
    cores: set[int] = set()
    for part in text.replace(" ", "").split(","):
        low, dash, high = part.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            raise CoreSpecError(f"not a core list: {text!r} (e.g. 2 or 2-3 or 0,2)")
        first, last = int(low), int(high) if dash else int(low)
        if last < first or last - first > 4096:
            raise CoreSpecError(f"not a core list: {text!r} (e.g. 2 or 2-3 or 0,2)")
        cores.update(range(first, last + 1))
    return frozenset(cores)


def cpulist(cores: frozenset[int] | set[int]) -> str:
    """The cpu-list text Docker's cpuset takes: "0,2,3"."""
    return ",".join(str(c) for c in sorted(cores))


def allowed() -> frozenset[int]:
    return frozenset(os.sched_getaffinity(0))


class Claim:
    """The cores this process owns (held until `release` or the process's end)."""

    def __init__(self, cores: frozenset[int], fds: list[int], why: str) -> None:
        self.cores, self._fds, self.why = cores, fds, why

    def release(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds = []


def claim(per_slot: int, explicit: str = "", lock_dir: Path | None = None) -> Claim:
    """Claim `per_slot` free cores of those this process may use (the lowest free
    first), or exactly `explicit` (a core list, e.g. MEMORACE_CORES=2-3); pin this
    process to them. No free cores (or per_slot 0): no pin, `why` says so."""
    mine = allowed()
    folder = lock_dir or Path(tempfile.gettempdir()) / LOCK_DIR
    if explicit:
        wanted = parse_cpulist(explicit)
        if not wanted <= mine:
            raise CoreSpecError(
                f"cores {cpulist(wanted - mine)} are not among this process's ({cpulist(mine)})"
            )
        fds = [fd for core in sorted(wanted) if (fd := _lock(folder, core)) is not None]
        return _pinned(wanted, fds, f"cores {cpulist(wanted)} (as configured)")
    if per_slot <= 0:
        return Claim(frozenset(), [], "not pinned (MEMORACE_SLOT_CORES=0)")
    got: list[tuple[int, int]] = []
    for core in sorted(mine):
        if len(got) == per_slot:
            break
        if (fd := _lock(folder, core)) is not None:
            got.append((core, fd))
    if len(got) < per_slot:
        for _, fd in got:
            os.close(fd)
        return Claim(
            frozenset(),
            [],
            f"NOT pinned: fewer than {per_slot} free core(s) of {cpulist(mine)} "
            "(more workers than slots on this host: timings are not fair)",
        )
    cores = frozenset(core for core, _ in got)
    return _pinned(cores, [fd for _, fd in got], f"cores {cpulist(cores)}")


def _pinned(cores: frozenset[int], fds: list[int], why: str) -> Claim:
    os.sched_setaffinity(0, cores)
    return Claim(cores, fds, why)


def _lock(folder: Path, core: int) -> int | None:
    """An fd holding core's lock, or None when another live process holds it."""
    folder.mkdir(mode=0o1777, exist_ok=True)
    fd = os.open(folder / f"core-{core}", os.O_RDONLY | os.O_CREAT, 0o666)  # any user's
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def docker_cpuset() -> str | None:
    """The cpuset for a planner container started by this process: its own cores when
    it is pinned to fewer than the host has, else None (Docker's default: any)."""
    mine = allowed()
    return cpulist(mine) if len(mine) < (os.cpu_count() or len(mine)) else None


CGROUP_V1 = Path("/sys/fs/cgroup/cpuset")
CGROUP_V2 = Path("/sys/fs/cgroup")


def join_cpuset() -> bool:
    """In a planner's child, before it drops root: join a cpuset cgroup holding exactly
    the cores this process is pinned to (made on first use), so the planner cannot widen
    its mask. False (and nothing changed) where pinned to every core or where no cpuset
    cgroup can be made; never raises (a judge without cgroups still judges)."""
    mine = allowed()
    if len(mine) >= (os.cpu_count() or len(mine)):
        return False
    name = "memorace-" + cpulist(mine).replace(",", "_")
    for base in (CGROUP_V1, CGROUP_V2):
        group = base / name
        with suppress(OSError):  # made by an earlier planner of this slot: one write
            (group / "cgroup.procs").write_text(str(os.getpid()))
            return True
        with suppress(OSError):  # the slot's first planner (or a group not set up yet)
            _make_cpuset(base, group, mine)
            (group / "cgroup.procs").write_text(str(os.getpid()))
            return True
    return False


def _make_cpuset(base: Path, group: Path, cores: frozenset[int]) -> None:
    """Make `group` a cpuset cgroup of `cores` (OSError where it cannot be)."""
    if base == CGROUP_V2:
        if "cpuset" not in (base / "cgroup.controllers").read_text().split():
            raise OSError(f"no cpuset controller in {base}")
        (base / "cgroup.subtree_control").write_text("+cpuset")
    group.mkdir(exist_ok=True)
    if base == CGROUP_V1:  # v1 starts a group with no cores and no memory nodes
        (group / "cpuset.mems").write_text((base / "cpuset.mems").read_text())
    (group / "cpuset.cpus").write_text(cpulist(cores))
