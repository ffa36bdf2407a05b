"""What every sandbox offers the judging pipeline."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from judge.package import Limits
from judge.sandbox.dialog import Talk

LOG_TAIL_BYTES = 8192
OUTPUT_LIMIT_BYTES = 64 * 2**20  # stdout+stderr, and any one file a planner writes


class SandboxError(Exception):
    """The sandbox itself failed (our fault: JUDGE_ERROR, retried)."""


@dataclass(frozen=True)
class RunOutcome:
    exit_code: int | None  # None when killed for time; negative: killed by that signal
    time_s: float
    timed_out: bool = False
    memory_exceeded: bool = False
    output_exceeded: bool = False
    log: str = ""  # tail of stdout and stderr


class Session(Protocol):
    case_dir: Path  # host directory the pipeline fills before each run_case
    out_dir: Path  # host directory holding what the planner wrote, after run_case

    def build(self, timeout_s: float) -> RunOutcome | None:
        """Build the submission (None when it has no build step)."""
        ...

    def build_identity(self) -> str | None:
        """What a build's output depends on besides the files, command and limits (the
        sandbox's kind, its image or toolchain); None: builds here are not kept."""
        ...

    def export_build(self, dest: Path) -> dict[str, Any]:
        """Copy the built tree into `dest` (which this creates), for the build cache;
        returns what `restore_build` needs to know of it."""
        ...

    def restore_build(self, payload: Path, meta: dict[str, Any]) -> None:
        """Install an exported tree as if this session had built it (instead of build);
        on an error (OSError, SandboxError) the session is as before."""
        ...

    def run_case(self, time_limit_s: float) -> RunOutcome:
        """Run the planner once on what case_dir holds now, from the state right after the
        build (nothing an earlier case wrote is left); afterwards no process of it is left."""
        ...

    def run_dialog(self, script: bytes, time_limit_s: float) -> tuple[RunOutcome, Talk]:
        """As run_case, but the planner (an `online` allocator) talks with the judge over
        its stdin and stdout (judge.sandbox.dialog.converse with `script`; stderr is its
        log); the time limit covers the whole run, dialog and exit."""
        ...


class Sandbox(Protocol):
    name: str

    def session(
        self,
        submission_root: Path,
        build: list[str] | None,
        run: list[str],
        limits: Limits,
        gpu_slot: int | None = None,
    ) -> AbstractContextManager[Session]: ...


def tail(data: bytes) -> str:
    return data[-LOG_TAIL_BYTES:].decode("utf-8", "replace")


def brief(data: bytes, limit: int = 240) -> str:
    """The first line of a tool's error, its middle cut when long (e.g. a path 4 KiB long)."""
    lines = data.decode("utf-8", "replace").strip().splitlines()
    line = lines[0] if lines else ""
    return line if len(line) <= limit else f"{line[: limit // 2]}...{line[-limit // 2 :]}"


def process_alive(pid: int, started: str | None = None) -> bool:
    """Whether process `pid` of this host still runs; a zombie (killed, not yet reaped,
    e.g. when PID 1 does not reap) counts as dead. Owners of leftovers are told by it.
    `started` (process_started's): dead too if `pid` now names a later process (a
    worker container restarted under its hostname gets its old pids back)."""
    fields = _stat_fields(pid)
    if not fields or fields[0] == "Z":
        return False
    return started is None or fields[19] == started


def process_started(pid: int) -> str | None:
    """When process `pid` started (clock ticks since boot, /proc's field 22): with the
    pid, it names one process for good."""
    fields = _stat_fields(pid)
    return fields[19] if fields else None


def _stat_fields(pid: int) -> list[str]:
    """/proc/PID/stat's fields after the command name (state first); [] if gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []
    return fields if len(fields) > 19 else []
