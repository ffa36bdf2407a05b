#!/usr/bin/env python3
"""Pack the greedy offload planner into the contestant-style archive the service judges
(reference_solutions/offload_greedy.tar.gz, the `greedy` offload baseline):
offload_greedy.py (the entry), its parts (every other .py here but this script) and
memorace.toml. The v2 strong planner's archive (offload_strong_v2/pack.py) carries the
same modules, as it plans with them. Fixed times and owners (judge.archive.pack_tar_gz);
whether the archive is current is told by its members' names and contents
(judge.archive.packed_current), never by gzip's bytes (another zlib, other bytes).

    python reference_solutions/offload_greedy/pack.py [OUT]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # `python reference_solutions/.../pack.py` from anywhere

from judge.archive import folder_members, pack_tar_gz, write_packed  # noqa: E402

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "offload_greedy.tar.gz"


def members() -> dict[str, bytes]:
    """{name in the archive: contents}: the entry, its parts (not this script) and the
    manifest."""
    return folder_members(HERE, ("*.py", "memorace.toml"))


if __name__ == "__main__":
    write_packed(pack_tar_gz(members()), sys.argv, OUT)
