#!/usr/bin/env python3
"""Pack the strong online allocator into the contestant-style archive the service judges
(reference_solutions/online_strong.tar.gz): main.py, its modules (factors.py, follower.py,
place.py, room.py, ties.py), placer.cpp and memorace.toml from here, with online_greedy.py (its
best fit and protocol loop) beside them.

The archive is made with fixed times and owners, but gzip's bytes may differ between
machines (zlib builds), so whether it is current is told by its members' names and
contents (`current`), never by comparing compressed bytes.

    python reference_solutions/online_strong/pack.py [OUT]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # `python reference_solutions/.../pack.py` from anywhere

from judge.archive import pack_tar_gz, packed_current, tar_members, write_packed  # noqa: E402

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "online_strong.tar.gz"


def members() -> dict[str, bytes]:
    """{name in the archive: contents}."""
    names = ("main.py", "factors.py", "follower.py", "place.py", "room.py", "ties.py", "placer.cpp")
    files = {n: HERE / n for n in (*names, "memorace.toml")}
    files["online_greedy.py"] = HERE.parent / "online_greedy.py"
    return {name: files[name].read_bytes() for name in sorted(files)}


def pack() -> bytes:
    return pack_tar_gz(members())


contents = tar_members  # {name: contents} of an archive's regular files


def current(archive: Path = OUT) -> bool:
    return packed_current(archive, members())


if __name__ == "__main__":
    write_packed(pack(), sys.argv, OUT)
