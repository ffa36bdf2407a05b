#!/usr/bin/env python3
"""Pack the strong offload planner into the contestant-style archive the service judges
(reference_solutions/offload_strong.tar.gz): strong.py and memorace.toml, with the
greedy planner, the v1 C++ planner and a copy of the judge's offload model (the planner
computes exact makespans with it; the sandbox has no repository). Fixed times and
owners, so packing again changes no member; the test compares members' names and bytes
(not the compressed bytes: another zlib compresses the same tar differently).

    python reference_solutions/offload_strong_v2/pack.py [OUT]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # `python reference_solutions/.../pack.py` from anywhere

from judge.archive import pack_tar_gz, write_packed  # noqa: E402

HERE = Path(__file__).resolve().parent
OUT = ROOT / "reference_solutions" / "offload_strong.tar.gz"
JUDGE = ("__init__.py", "errors.py", "csvtable.py", "csvscan.py", "verdict.py",
         "types/__init__.py", "types/base.py", "types/offset/*.py",
         "types/offload/*.py")  # fmt: skip


def members() -> list[tuple[str, Path]]:
    """(name in the archive, source file), sorted by name."""
    ours = ("strong.py", "judged.py", "nvme_pace.py", "placing.py", "skyline.py", "memorace.toml")
    files = [(n, HERE / n) for n in ours]
    files += [(n, ROOT / "reference_solutions" / n)
              for n in ("offload_greedy.py", "offload_strong.cpp")]  # fmt: skip
    for pattern in JUDGE:
        files += [(str(p.relative_to(ROOT)), p) for p in sorted((ROOT / "judge").glob(pattern))]
    return sorted(files)


def pack() -> bytes:
    return pack_tar_gz({name: path.read_bytes() for name, path in members()})


if __name__ == "__main__":
    write_packed(pack(), sys.argv, OUT)
