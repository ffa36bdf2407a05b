"""What a build in the local sandbox depends on besides the submission: the host's own
tools (the sandbox sees the host's /usr), told apart for the build cache."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

DPKG_STATUS = Path("/var/lib/dpkg/status")  # rewritten by every install, upgrade, removal
LOCAL = (Path("/usr/local/include"), Path("/usr/local/lib"))  # on g++'s default paths
MAX_LOCAL_ENTRIES = 10_000


def host_toolchain() -> str | None:
    """A fingerprint of the host's installed packages (Debian's dpkg status) and of what
    /usr/local adds to the compiler's default paths (every header by name, size and
    time; the top of /usr/local/lib); None where there is no dpkg status to go by."""
    try:
        h = hashlib.sha256(DPKG_STATUS.read_bytes())
    except OSError:
        return None
    seen = 0
    for top, deep in zip(LOCAL, (True, False), strict=True):
        for path in _entries(top, deep):
            seen += 1
            if seen > MAX_LOCAL_ENTRIES:
                return None
            try:
                st = path.lstat()
            except OSError:
                continue
            h.update(
                b"%s\0%d %d %o\0" % (os.fsencode(path), st.st_size, st.st_mtime_ns, st.st_mode)
            )
    return h.hexdigest()


def _entries(top: Path, deep: bool) -> list[Path]:
    try:
        return sorted(top.rglob("*") if deep else top.iterdir())
    except OSError:
        return []
