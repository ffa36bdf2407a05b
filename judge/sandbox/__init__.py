"""Sandboxes run untrusted planners: `docker` (production) and `local` (embedded default).

Both give a session per submission per judging: build once, run each case,
and hand back what the planner wrote, with the same limits and verdict hints.
"""

from __future__ import annotations

from judge.sandbox.base import RunOutcome, Sandbox, SandboxError, Session


def get_sandbox(name: str) -> Sandbox:
    """The sandbox called `name`: 'local' or 'docker'."""
    if name == "local":
        from judge.sandbox.local import LocalSandbox

        return LocalSandbox()
    if name == "docker":
        from judge.sandbox.docker import DockerSandbox

        return DockerSandbox()
    raise SandboxError(f"unknown sandbox '{name}' (known: local, docker)")


def default_sandbox_name() -> str:
    """'docker' when an engine answers, else 'local'."""
    from judge.sandbox.docker import engine_available

    return "docker" if engine_available() else "local"


__all__ = [
    "RunOutcome",
    "Sandbox",
    "SandboxError",
    "Session",
    "default_sandbox_name",
    "get_sandbox",
]
