"""Start-up checks of a worker: a worker that would judge every submission wrongly
refuses to start and says why, instead of blaming contestants with BUILD_ERRORs."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from api.settings import Settings


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
