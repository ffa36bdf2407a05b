#!/usr/bin/env python3
"""Pack the strong offset planner into the contestant-style archive the judge runs
(reference_solutions/strong_search.tar.gz): main.cpp, its modules (*.hpp) and
memorace.toml, which builds main.cpp alone (a unity build) with the flags the judge
gives a single .cpp file. Fixed times and owners (judge.archive.pack_tar_gz), so packing
again changes no member; whether the archive is current is told by its members' names
and contents (`current`), never by its compressed bytes (another zlib, other bytes).

    python reference_solutions/strong_search/pack.py [OUT]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # `python reference_solutions/.../pack.py` from anywhere

from judge.archive import folder_members, pack_tar_gz, packed_current, tar_members, write_packed  # noqa: E402

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "strong_search.tar.gz"


def members() -> dict[str, bytes]:
    """{name in the archive: contents}: every module, main.cpp and the manifest."""
    return folder_members(HERE, ("*.hpp", "main.cpp", "memorace.toml"))


def pack() -> bytes:
    return pack_tar_gz(members())


contents = tar_members  # {name: contents} of an archive's regular files


def current(archive: Path = OUT) -> bool:
    return packed_current(archive, members())


if __name__ == "__main__":
    write_packed(pack(), sys.argv, OUT)
