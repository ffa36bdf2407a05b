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

from judge.archive import pack_tar_gz, tar_members  # noqa: E402

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


def contents(archive: Path) -> dict[str, bytes]:
    """{name: contents} of the regular files in an archive."""
    return tar_members(archive)


def current(archive: Path = OUT) -> bool:
    return archive.is_file() and contents(archive) == members()


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    out.write_bytes(pack())
    print(f"wrote {out}")
