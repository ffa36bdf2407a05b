#!/usr/bin/env python3
"""Pack the naive offload planner's C++ port into the archive the starter kit hands out
as its offload C++ template (reference_solutions/offload_naive_cpp.tar.gz): main.cpp, its
modules (*.hpp) and memorace.toml, which builds main.cpp alone (a unity build) with the
flags the judge gives a single .cpp file, so the program is the one the single-file
port it replaced was; the kit unfolds it into one planner.cpp
(judge.starterkit.template_source). Fixed times and owners (judge.archive.pack_tar_gz);
whether the archive is current is told by its members' names and contents
(judge.archive.packed_current), never by gzip's bytes.

    python reference_solutions/offload_naive_cpp/pack.py [OUT]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # `python reference_solutions/.../pack.py` from anywhere

from judge.archive import folder_members, pack_tar_gz, write_packed  # noqa: E402

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "offload_naive_cpp.tar.gz"


def members() -> dict[str, bytes]:
    """{name in the archive: contents}: every module, main.cpp and the manifest."""
    return folder_members(HERE, ("*.hpp", "main.cpp", "memorace.toml"))


if __name__ == "__main__":
    write_packed(pack_tar_gz(members()), sys.argv, OUT)
