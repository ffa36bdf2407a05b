"""Every reader of outside input, fed random and mutated bytes, deep nesting and huge
integers: only the documented errors (judge.errors.InputError and its family) may
escape, never a traceback (issue 9). 10,000 inputs per reader from a seeded sweep of
plain random draws (fast), and 2,000 more from hypothesis (its edge-first search).

Seeds are small valid inputs cut from the shipped problems (a few rows, steps and
tensors each), so that mutations reach the checks behind the syntax; a parsed plan
is also verified and scored, which must not raise either.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judge.errors import CaseError, PackageError, PlanError, SubmissionError
from judge.importer import import_minimalloc
from judge.package import load_cases, load_problem
from judge.submission import prepare_submission
from judge.types import get_type
from judge.types.offload import case as offload_case
from judge.types.offload import plan as offload_plan
from judge.types.offset import case as offset_case
from judge.types.offset import plan as offset_plan
from tests.test_offload_v2 import worked_example
from tests.test_package import GOOD_TOML

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = int(os.environ.get("MEMORACE_FUZZ_EXAMPLES", "10000"))  # fewer only while developing
# Hypothesis's engine costs several times what the readers do per example: the sweep
# draws the same families with `random` and carries the 10,000.
FUZZ = settings(
    max_examples=max(1, EXAMPLES // 5), deadline=None, suppress_health_check=list(HealthCheck),
    database=None,
)  # fmt: skip

# Tokens that broke readers before, or could: long and wide integers, nesting, line ends.
SPECIAL = [
    b"9" * 5000, b"1" * 19, b"4611686018427387904", b"4611686018427387905",
    b"9223372036854775808", b"18446744073709551616", b"-1", b"-0", b"0x" + b"f" * 4000,
    b"1e999", b"-1e999", b"NaN", b"Infinity", b"1.5", b"true", b"null", b'""', b"[]", b"{}",
    b"[" * 5000, b"{" * 5000, b'{"a":' * 3000, b"]", b"}", b",", b":", b'"', b"\\",
    b"\r", b"\r\n", b"\n", b"\n\n", b"\x00", b"\xff", b"\xef\xbb\xbf", b"\xed\xa0\x80",
    b" ", b"\t", b"=", b"[[cases]]\n", b'"""', b"'''", b"\\u0000", b"\\ud800",
]  # fmt: skip


def mutate(seed: bytes, entropy: int) -> bytes:
    """`seed` with up to 4 random edits: bytes replaced, tokens inserted, ranges cut or
    doubled. The edits come from one drawn number (a failure names it and replays it):
    drawing each edit through hypothesis cost more than the readers themselves."""
    rng = random.Random(entropy)
    data = bytearray(seed)
    for _ in range(rng.randrange(5)):
        op, at = rng.randrange(5), rng.randrange(len(data) + 1)
        end = min(len(data), at + rng.randrange(41))
        if op == 0:
            data[at:end] = rng.randbytes(rng.randrange(4))
        elif op == 1:
            data[at:at] = rng.choice(SPECIAL)
        elif op == 2:
            del data[at:end]
        elif op == 3:
            data[at:at] = data[at:end]
        else:
            data[at:at] = rng.randbytes(rng.randrange(1, 9))
    return bytes(data)


def mutated(seeds: list[bytes]) -> st.SearchStrategy[bytes]:
    return st.builds(mutate, st.sampled_from(seeds), st.integers(0, 2**64 - 1))


def _repeat(opener: bytes, times: int) -> bytes:
    return opener * times


# Named functions, not lambdas, and strategies built once: hypothesis describes a lambda
# by compiling its source, which would dominate the time of each example.
DEEP = st.builds(
    _repeat, st.sampled_from([b"[", b'{"a":', b"a = [", b"a = {b = "]), st.integers(100, 100_000)
)
RANDOM = st.binary(max_size=300)


def inputs(seeds: list[bytes]) -> st.SearchStrategy[bytes]:
    strategy = st.one_of(mutated(seeds), mutated(seeds), RANDOM, DEEP)
    SEEDS_OF[id(strategy)] = seeds
    return strategy


SEEDS_OF: dict[int, list[bytes]] = {}  # inputs(seeds) -> seeds, for the sweep's draws


def random_input(rng: random.Random, strategy: st.SearchStrategy[bytes]) -> bytes:
    """What `strategy` (made by inputs()) draws, drawn with `rng`: the same mix."""
    pick = rng.randrange(4)
    if pick < 2:
        return mutate(rng.choice(SEEDS_OF[id(strategy)]), rng.getrandbits(64))
    if pick == 2:
        return rng.randbytes(rng.randrange(301))
    return _repeat(rng.choice([b"[", b'{"a":', b"a = [", b"a = {b = "]), rng.randint(100, 100_000))


def sweep(check: Any, draw: Any) -> None:
    """`check(*draw(rng))` for EXAMPLES seeded draws; a failure names its draw."""
    for i in range(EXAMPLES):
        rng = random.Random(i)
        args = draw(rng)
        try:
            check(*args)
        except Exception as exc:
            raise AssertionError(f"sweep draw {i}: {args!r:.300}") from exc


# --- seeds from the shipped problems -----------------------------------------------------------


def shipped(kind: str) -> list[Path]:
    return sorted(ROOT.glob(f"problems/*/data/public/*.{kind}"))


def small_csv_cases() -> list[bytes]:
    out = []
    for path in shipped("csv"):
        lines = path.read_bytes().splitlines(keepends=True)
        out.append(b"".join(lines[:12]))
    return out


def stacked_plan(case: offset_case.OffsetCase) -> bytes:
    """A valid plan: buffers one above the other, each aligned."""
    rows, top = [], 0
    for bid, size, align in zip(case.ids, case.size.tolist(), case.alignment.tolist(), strict=True):
        top = -(-top // align) * align
        rows.append(f"{bid},{top}\n")
        top += size
    return ("id,offset\n" + "".join(rows)).encode()


def small_offload_cases() -> list[dict[str, Any]]:
    out = []
    for path in shipped("json"):
        raw = json.loads(path.read_bytes())
        steps = raw["steps"][:8]
        tensors = [t for t in raw["tensors"] if t["uses"][-1] < len(steps)][:8]
        kept = {t["id"] for t in tensors}
        # a recompute whose sources were cut away goes too (v2 cases name them)
        tensors = [_without_lost_sources(t, kept) for t in tensors]
        out.append({**raw, "steps": steps, "tensors": tensors})
    return out


def _without_lost_sources(t: dict[str, Any], kept: set[str]) -> dict[str, Any]:
    sources = t.get("recompute", {}).get("from", [])
    if all(j in kept for j in sources):
        return t
    return {k: v for k, v in t.items() if k != "recompute"}


def one_residency_plan(raw: dict[str, Any]) -> dict[str, Any]:
    entries, top = [], 0
    for t in raw["tensors"]:
        top = -(-top // t["alignment"]) * t["alignment"]
        entries.append({"id": t["id"], "residencies": [{"offset": top, "uses": len(t["uses"])}]})
        top += t["size"]
    return {"tensors": entries}


OFFSET_CASES = small_csv_cases()
OFFSET_PARSED = [offset_case.parse_case_bytes(c, "case.csv", 2**62) for c in OFFSET_CASES]
OFFSET_PLANS = [stacked_plan(c) for c in OFFSET_PARSED]
V2_CASE, V2_PLAN = worked_example()  # every v2 field, in the README's worked example
OFFLOAD_RAW = [*small_offload_cases(), V2_CASE]
OFFLOAD_CASES = [json.dumps(r, indent=1).encode() for r in OFFLOAD_RAW]
OFFLOAD_PARSED = [offload_case.parse_case(r, "case.json", None) for r in OFFLOAD_RAW]
OFFLOAD_PLANS = [json.dumps(one_residency_plan(r), indent=1).encode() for r in OFFLOAD_RAW[:-1]]
OFFLOAD_PLANS.append(json.dumps(V2_PLAN, indent=1).encode())
OFFSET_PLAN_INPUTS = [inputs([p]) for p in OFFSET_PLANS]
OFFLOAD_PLAN_INPUTS = [inputs([p]) for p in OFFLOAD_PLANS]


def test_seeds_are_valid():
    assert len(OFFSET_CASES) >= 5 and len(OFFLOAD_CASES) >= 5
    for case, plan in zip(OFFSET_PARSED, OFFSET_PLANS, strict=True):
        offset_plan.parse_plan_bytes(plan, "plan.csv", case)
    for case, plan in zip(OFFLOAD_PARSED, OFFLOAD_PLANS, strict=True):
        offload_plan.parse_plan_bytes(plan, "plan.json", case)


# --- case and plan readers -----------------------------------------------------------------------


def check_everything(type_name: str, case: Any, plan: Any) -> None:
    """Verifying and scoring a parsed plan never raises."""
    ptype = get_type(type_name)
    bound = ptype.lower_bound(case)
    ptype.score(case, bound, ptype.verify(case, plan))


# type -> (parse a case from bytes, its fuzzed inputs, capacities, parse a plan, plan name)
READERS: dict[str, tuple[Any, ...]] = {
    "offset": (offset_case.parse_case_bytes, inputs(OFFSET_CASES), [0, 16, 2**62],
               offset_plan.parse_plan_bytes, "plan.csv"),
    "offload": (offload_case.parse_case_bytes, inputs(OFFLOAD_CASES), [None, 16],
                offload_plan.parse_plan_bytes, "plan.json"),
}  # fmt: skip
PLAN_SEEDS = {
    "offset": list(zip(OFFSET_PARSED, OFFSET_PLAN_INPUTS, strict=True)),
    "offload": list(zip(OFFLOAD_PARSED, OFFLOAD_PLAN_INPUTS, strict=True)),
}


@pytest.mark.parametrize("kind", ["offset", "offload"])
@FUZZ
@given(data=st.data())
def test_case_reader(kind: str, data: st.DataObject):
    _, fuzzed, capacities, _, _ = READERS[kind]
    read_case(kind, data.draw(fuzzed), data.draw(st.sampled_from(capacities)))


def read_case(kind: str, raw: bytes, capacity: int | None) -> None:
    parse = READERS[kind][0]
    try:
        case = parse(raw, "case", capacity)
    except CaseError:
        return
    get_type(kind).lower_bound(case)


@pytest.mark.parametrize("kind", ["offset", "offload"])
@FUZZ
@given(data=st.data())
def test_plan_reader(kind: str, data: st.DataObject):
    case, fuzzed = data.draw(st.sampled_from(PLAN_SEEDS[kind]))
    read_plan(kind, case, data.draw(fuzzed))


def read_plan(kind: str, case: Any, raw: bytes) -> None:
    _, _, _, parse, name = READERS[kind]
    try:
        plan = parse(raw, name, case)
    except PlanError:
        return
    check_everything(kind, case, plan)


@pytest.mark.parametrize("kind", ["offset", "offload"])
def test_case_and_plan_readers_on_a_seeded_sweep(kind: str):
    _, fuzzed, capacities, _, _ = READERS[kind]

    def draw_case(rng: random.Random) -> tuple[Any, ...]:
        return kind, random_input(rng, fuzzed), rng.choice(capacities)

    def draw_plan(rng: random.Random) -> tuple[Any, ...]:
        case, plans = rng.choice(PLAN_SEEDS[kind])
        return kind, case, random_input(rng, plans)

    sweep(read_case, draw_case)
    sweep(read_plan, draw_plan)


def test_file_readers_refuse_what_is_not_a_file(tmp_path: Path):
    (tmp_path / "dir").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "dir")
    for name in ("dir", "link", "missing"):
        with pytest.raises(CaseError):
            offload_case.read_case(tmp_path / name, None)
        with pytest.raises(PlanError):
            offload_plan.read_plan(tmp_path / name, OFFLOAD_PARSED[0])
        with pytest.raises(CaseError):
            offset_case.read_case(tmp_path / name, 16)
        with pytest.raises(PlanError):
            offset_plan.read_plan(tmp_path / name, OFFSET_PARSED[0])


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
