"""Readers of outside files and folders, fuzzed as in tests/test_fuzz_readers.py (its
docstring says how): problem packages in every layout an organizer's archive can
have, the MiniMalloc importer, and archive unpacking (submissions; problem packages
use the same). Only the documented errors may escape."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import random
import shutil
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judge.errors import PackageError, SubmissionError
from judge.importer import import_minimalloc
from judge.package import load_cases, load_problem
from judge.submission import prepare_submission
from tests.fuzzing import (
    FUZZ,
    OFFLOAD_CASES,
    OFFSET_CASES,
    inputs,
    mutate,
    mutated,
    random_input,
    sweep,
)
from tests.test_package import GOOD_TOML

# --- packages and the MiniMalloc importer --------------------------------------------------------


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    # Thousands of small files: tmpfs where there is one (30x faster than an overlay disk).
    shm = Path("/dev/shm")
    where = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="memorace-fuzz-", dir=where) as tmp:
        yield Path(tmp)


def fresh(folder: Path) -> Path:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


TINY_TOML = GOOD_TOML.replace("capacity = 16", "capacity = 1073741824").encode()
OFFLOAD_TOML = TINY_TOML.replace(b'"offset"', b'"offload"')
# Which file becomes a folder instead (the layouts an organizer's archive can have).
LAYOUTS = ["", "problem.toml", "statement.md", "data/public/one", "data"]
PACKAGE_INPUTS = {
    "offset": (inputs([TINY_TOML]), inputs(OFFSET_CASES), st.sampled_from(OFFSET_CASES)),
    "offload": (inputs([OFFLOAD_TOML]), inputs(OFFLOAD_CASES), st.sampled_from(OFFLOAD_CASES)),
}
STATEMENT = b"# Tiny\n\nPlace the buffers.\n"
STATEMENTS = mutated([STATEMENT])


@FUZZ
@given(
    st.sampled_from(["offset", "offload"]),
    st.data(),
    st.sampled_from(LAYOUTS),
)
def test_package_loader(scratch: Path, kind: str, data: st.DataObject, layout: str):
    toml, fuzzed_case, good_case = PACKAGE_INPUTS[kind]
    drawn = [data.draw(toml), data.draw(STATEMENTS), data.draw(fuzzed_case), data.draw(good_case)]
    load_package(scratch, kind, layout, *drawn)


def test_package_loader_on_a_seeded_sweep(scratch: Path):
    def draw(rng: random.Random) -> tuple[Any, ...]:
        kind = rng.choice(["offset", "offload"])
        toml, fuzzed_case, _ = PACKAGE_INPUTS[kind]
        good = rng.choice(OFFSET_CASES if kind == "offset" else OFFLOAD_CASES)
        statement = mutate(STATEMENT, rng.getrandbits(64))
        fuzzed = (random_input(rng, toml), statement, random_input(rng, fuzzed_case), good)
        return scratch, kind, rng.choice(LAYOUTS), *fuzzed

    sweep(load_package, draw)


def load_package(
    scratch: Path, kind: str, layout: str, toml: bytes, statement: bytes, case: bytes, good: bytes
) -> None:
    suffix = ".csv" if kind == "offset" else ".json"
    pkg = fresh(scratch / "pkg" / "tiny")
    files = {
        "problem.toml": toml,
        "statement.md": statement,
        f"data/public/one{suffix}": case,
        f"data/hidden/two{suffix}": good,
    }
    for name, content in files.items():
        path = pkg / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if layout and name.startswith(layout):
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.write_bytes(content)
    with contextlib.suppress(PackageError):
        load_cases(load_problem(pkg))


MM_NAMES = ["input.12.csv", "A.1048576.csv", "case.csv", "b.99999999999999999999999.csv"]
MM_CASES = inputs(OFFSET_CASES)


def _csv_name(stem: str) -> str:
    return stem + ".csv"


NAME_TEXT = st.text(st.characters(blacklist_characters="/\x00"), min_size=1, max_size=30)


@FUZZ
@given(
    st.lists(
        st.tuples(
            st.one_of(
                st.sampled_from(MM_NAMES),
                NAME_TEXT.map(_csv_name),
            ),
            MM_CASES,
        ),
        min_size=1,
        max_size=3,
    ),
    st.sampled_from([None, 2**30]),
)
def test_minimalloc_importer(scratch: Path, files: list[tuple[str, bytes]], capacity: int | None):
    import_files(scratch, files, capacity)


def test_minimalloc_importer_on_a_seeded_sweep(scratch: Path):
    def name(rng: random.Random) -> str:
        if rng.randrange(2):
            return rng.choice(MM_NAMES)
        # any character but / and NUL, surrogates included (as st.characters draws them)
        chars = [rng.choice([rng.randrange(1, 128), rng.randrange(1, 0x110000)])
                 for _ in range(rng.randint(1, 30))]  # fmt: skip
        return ("".join(chr(c) for c in chars if c != ord("/")) or "x") + ".csv"

    def draw(rng: random.Random) -> tuple[Any, ...]:
        files = [(name(rng), random_input(rng, MM_CASES)) for _ in range(rng.randint(1, 3))]
        return scratch, files, rng.choice([None, 2**30])

    sweep(import_files, draw)


def import_files(scratch: Path, files: list[tuple[str, bytes]], capacity: int | None) -> None:
    source = fresh(scratch / "mm-source")
    dest = fresh(scratch / "mm-dest")
    for name, content in files:
        try:  # names that are no file name at all (lone surrogates other than escaped bytes)
            too_long = len(os.fsencode(name)) > 200
        except UnicodeEncodeError:
            continue
        if name in (".csv", "..csv") or too_long:
            continue
        (source / name).write_bytes(content)
    with contextlib.suppress(PackageError):
        import_minimalloc(source, dest, "mm", capacity)


# --- archives (submissions; problem packages use the same unpacking) ------------------------------


def zip_seed() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("team/memorace.toml", 'run = ["python3", "main.py"]\n')
        zf.writestr("team/main.py", "print('plan')\n")
        zf.writestr("__MACOSX/._main.py", "junk")
    return out.getvalue()


def tar_seed() -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, text in (("memorace.toml", b'run = "./planner"\n'), ("planner", b"#!/bin/sh\n")):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(text), 0o755
            tf.addfile(info, io.BytesIO(text))
    return out.getvalue()


ARCHIVE_INPUTS = {
    "zip": inputs([zip_seed()]),
    "tar": inputs([tar_seed()]),
    "tgz": inputs([gzip.compress(tar_seed(), mtime=0)]),
}


@FUZZ
@given(
    st.sampled_from(["zip", "tar", "tgz"]),
    st.data(),
)
def test_archive_unpacking(scratch: Path, kind: str, data: st.DataObject):
    unpack(scratch, kind, data.draw(ARCHIVE_INPUTS[kind]))


def test_archive_unpacking_on_a_seeded_sweep(scratch: Path):
    def draw(rng: random.Random) -> tuple[Any, ...]:
        kind = rng.choice(["zip", "tar", "tgz"])
        return scratch, kind, random_input(rng, ARCHIVE_INPUTS[kind])

    sweep(unpack, draw)


def unpack(scratch: Path, kind: str, fuzzed: bytes) -> None:
    if kind == "zip":
        raw, name = fuzzed, "sub.zip"
    elif kind == "tar":  # a fuzzed tar inside a valid gzip stream
        raw, name = gzip.compress(fuzzed, mtime=0), "sub.tar.gz"
    else:
        raw, name = fuzzed, "sub.tgz"
    folder = fresh(scratch / "upload")
    source = folder / name
    source.write_bytes(raw)
    with contextlib.suppress(SubmissionError):
        prepare_submission(source, folder / "out")
