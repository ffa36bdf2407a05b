"""Running a planner program under the planner contract, as a plain child process.

This is the unsandboxed runner used for the project's own reference planners
and for quick local checks; it gives a planner its case and output directories
through MEMORACE_CASE_DIR / MEMORACE_OUT_DIR, a clean environment, a wall-time
limit (the whole process group is killed on timeout) and capped logs.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

CXX_FLAGS = ("-O2", "-std=c++20")
LOG_TAIL_BYTES = 8192


class BuildError(Exception):
    """The submission did not build; the message is the compiler's output."""


@dataclass(frozen=True)
class Planner:
    command: list[str]
    source: Path


@dataclass(frozen=True)
class RunOutcome:
    exit_code: int | None  # None when killed for time
    time_s: float
    timed_out: bool
    log: str


def cache_dir() -> Path:
    return Path(os.environ.get("MEMORACE_CACHE", Path.home() / ".cache" / "memorace"))


def prepare_planner(source: Path) -> Planner:
    """A runnable command for a .py or .cpp planner (C++ is compiled once, cached)."""
    source = Path(source).resolve()
    if source.suffix == ".py":
        return Planner([sys.executable, "-I", str(source)], source)
    if source.suffix in (".cpp", ".cc"):
        return Planner([str(_compile_cpp(source))], source)
    raise BuildError(f"{source.name}: unsupported planner kind (expected .py or .cpp)")


def _compile_cpp(source: Path) -> Path:
    digest = hashlib.sha256(source.read_bytes() + " ".join(CXX_FLAGS).encode()).hexdigest()
    binary = cache_dir() / "build" / digest[:24] / "planner"
    if binary.exists():
        return binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    partial = binary.with_suffix(".partial")
    proc = subprocess.run(
        ["g++", *CXX_FLAGS, "-o", str(partial), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != 0:
        raise BuildError(proc.stderr[-LOG_TAIL_BYTES:] or f"g++ exited {proc.returncode}")
    partial.rename(binary)  # atomic: a concurrent judge never runs a half-written binary
    return binary


def run_planner(planner: Planner, case_dir: Path, out_dir: Path, time_limit_s: float) -> RunOutcome:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(out_dir),
        "LANG": "C.UTF-8",
        "MEMORACE_CASE_DIR": str(case_dir),
        "MEMORACE_OUT_DIR": str(out_dir),
    }
    with tempfile.TemporaryFile() as log:
        start = time.monotonic()
        proc = subprocess.Popen(
            planner.command,
            cwd=out_dir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, killed as a whole
        )
        timed_out = False
        try:
            proc.wait(timeout=time_limit_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            _kill_group(proc)
        elapsed = time.monotonic() - start
        log.seek(0, os.SEEK_END)
        log.seek(max(0, log.tell() - LOG_TAIL_BYTES))
        tail = log.read().decode("utf-8", "replace")
    return RunOutcome(None if timed_out else proc.returncode, elapsed, timed_out, tail)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def fresh_dirs(root: Path) -> tuple[Path, Path]:
    """Empty case/ and out/ directories under `root`."""
    case_dir, out_dir = root / "case", root / "out"
    for d in (case_dir, out_dir):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    return case_dir, out_dir
