#!/usr/bin/env python3
"""Pack the strong offload planner into the contestant-style archive the service judges
(reference_solutions/offload_strong.tar.gz): strong.py and memorace.toml, with the
greedy planner's modules (offload_greedy/*.py, imported as `offload_greedy`), the v1 C++
planner's sources (offload_strong_v1/main.cpp and its modules, built for v1 cases) and a
copy of the judge's offload model (the planner computes exact makespans with it; the
sandbox has no repository), each folder under its name in the repository. Fixed times and
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
# The planners it uses, each folder's sources under the folder's name (not their pack.py
# nor their manifests): greedy's modules (strong.py imports offload_greedy.py from there)
# and the v1 planner's unity build (memorace.toml builds its main.cpp as strong_v1).
PLANNERS = {"offload_greedy": ("*.py",), "offload_strong_v1": ("*.hpp", "main.cpp")}


def members() -> list[tuple[str, Path]]:
    """(name in the archive, source file), sorted by name."""
    ours = ("strong.py", "judged.py", "nvme_pace.py", "placing.py", "skyline.py", "memorace.toml")
    files = [(n, HERE / n) for n in ours]
    for folder, patterns in PLANNERS.items():
        where = ROOT / "reference_solutions" / folder
        for pattern in patterns:
            files += [(f"{folder}/{p.name}", p) for p in sorted(where.glob(pattern))
                      if p.name != "pack.py"]  # fmt: skip
    for pattern in JUDGE:
        files += [(str(p.relative_to(ROOT)), p) for p in sorted((ROOT / "judge").glob(pattern))]
    return sorted(files)


def pack() -> bytes:
    return pack_tar_gz({name: path.read_bytes() for name, path in members()})


if __name__ == "__main__":
    write_packed(pack(), sys.argv, OUT)
