"""The docker sandbox's side of the build cache: /built (root's copy of /work after the
build) leaves the container as a tar archive, made inside it, and comes back into a
fresh container's /built, unpacked inside it: the host never unpacks what a build made."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judge.sandbox import base
from judge.sandbox.base import SandboxError

ARCHIVE = "built.tar"
MAX_EXPORT_KB = 256 * 1024  # a bigger /built is not kept (the archive passes through memory)
RESTORE = (
    "tar -x -p --no-same-owner -C /built -f /case/{name} "
    "|| {{ find /built -mindepth 1 -delete; exit 1; }}"
)  # a partial unpack leaves nothing behind


def image_identity(container: Any) -> str:
    """The runner image the container was made from, by id (its toolchain)."""
    return f"docker:{container.attrs['Image']}"


def export_built(container: Any, dest: Path) -> dict[str, Any]:
    code, out = container.exec_run(["du", "-sk", "/built"], user="0")
    size_kb = out.split()[0] if code == 0 and out.split() else b""
    if not size_kb.isdigit() or int(size_kb) > MAX_EXPORT_KB:
        raise SandboxError(f"/built is not kept ({base.brief(out)})")
    code, (archive, err) = container.exec_run(
        ["tar", "-c", "-C", "/built", "."], user="0", demux=True
    )
    if code != 0 or archive is None:
        raise SandboxError(f"/built cannot be archived: {base.brief(err or b'')}")
    dest.mkdir(mode=0o700)
    (dest / ARCHIVE).write_bytes(archive)
    return {}


def restore_built(container: Any, case_dir: Path, payload: Path) -> None:
    """Unpack the kept archive into /built through the case folder (no planner runs yet;
    the archive is gone from there before any does)."""
    name = ".memorace-built.tar"
    staged = case_dir / name
    try:
        staged.write_bytes((payload / ARCHIVE).read_bytes())
        staged.chmod(0o600)  # container root reads it; the planner user may not
        code, out = container.exec_run(["sh", "-c", RESTORE.format(name=name)], user="0")
    finally:
        staged.unlink(missing_ok=True)
    if code != 0:
        raise SandboxError(f"the kept build cannot be restored: {base.brief(out)}")
