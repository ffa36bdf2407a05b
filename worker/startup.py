"""Start-up checks of a worker: a worker that would judge every submission wrongly, or
run planners unisolated, refuses to start and says why, instead of blaming contestants
with BUILD_ERRORs or handing a planner the service's network and files.

`python -m worker.startup` runs the same checks (scripts/serve, before it starts
anything): exit status 3 and the reason on stderr when a worker would refuse.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from api.settings import Settings


def refusal(settings: Settings) -> str:
    """Why this worker must not start ('' when it may): its sandbox, then its scratch."""
    return sandbox_problem(settings) or scratch_problem(settings) or cores_problem()


def cores_problem() -> str:
    """Why MEMORACE_CORES (a worker slot's own cores) cannot be used ('' when it can)."""
    from judge.sandbox.cores import CoreSpecError, allowed, parse_cpulist

    text = os.environ.get("MEMORACE_CORES", "").strip()
    try:
        wanted = parse_cpulist(text) if text else frozenset()
    except CoreSpecError as exc:
        return f"MEMORACE_CORES: {exc}"
    if extra := wanted - allowed():
        return f"MEMORACE_CORES names cores this host does not give it: {sorted(extra)}"
    return ""


def sandbox_problem(settings: Settings) -> str:
    """Why this worker's sandbox cannot keep planners isolated ('' when it can, or when
    MEMORACE_ALLOW_UNISOLATED=1 lets it judge without bubblewrap; see local_isolation)."""
    if _sandbox(settings) != "local":
        return ""  # docker: no network, its own files (judge.sandbox.docker)
    from judge.sandbox.local_isolation import worker_refusal

    return worker_refusal(settings.allow_unisolated)


def unisolated_warning(settings: Settings) -> str:
    """The line a worker that judges unisolated (development mode) logs at start."""
    if _sandbox(settings) != "local":
        return ""
    from judge.sandbox.local_isolation import bwrap_problem

    if not (why := bwrap_problem()):
        return ""
    return (
        f"worker judges with the local sandbox UNISOLATED (MEMORACE_ALLOW_UNISOLATED=1, "
        f"development only): {why}; planners have no network but can read every "
        "world-readable file; never run a contest like this"
    )


def scratch_problem(settings: Settings) -> str:
    """Why this worker cannot judge with its scratch folder ('' when it can)."""
    chosen = Path(tempfile.gettempdir())
    if wanted := os.environ.get("TMPDIR", ""):
        if not Path(wanted).is_dir() or not os.access(wanted, os.W_OK | os.X_OK):
            return (
                f"its scratch folder TMPDIR={wanted} is missing or not writable (Python would "
                f"use {chosen} instead); make it a folder this worker's user can write"
            )
        if chosen.resolve() != Path(wanted).resolve():
            return (
                f"Python chose {chosen} as its temporary folder, not TMPDIR={wanted} (it was "
                "missing when first asked); restart the worker now that it exists"
            )
    if _sandbox(settings) != "docker":
        return ""
    from judge.sandbox.base import SandboxError
    from judge.sandbox.docker import check_bind_mounts

    try:
        check_bind_mounts(chosen)
    except SandboxError as exc:
        return f"the docker sandbox cannot be used: {exc}"
    return ""


def _sandbox(settings: Settings) -> str:
    if settings.sandbox:
        return settings.sandbox
    from judge.sandbox import default_sandbox_name

    return default_sandbox_name()


def main() -> int:
    from api.settings import get_settings

    settings = get_settings()
    if why := refusal(settings):
        print(f"the worker refuses to start: {why}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
