"""Turn a folder of MiniMalloc-format CSV cases into a problem package."""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

import tomli_w

from judge.csvtable import INT_LIMIT
from judge.errors import PackageError, show_value
from judge.package import CASE_NAME, SLUG, Problem, load_cases, load_problem

_CAPACITY_IN_NAME = re.compile(r"^(?P<name>.+)\.(?P<capacity>\d+)$")

STATEMENT = """# {title}

Place every buffer of each case into one memory arena.

## Input
`$MEMORACE_CASE_DIR/buffers.csv` has the header `id,lower,upper,size,alignment`:
buffer `id` is live during the half-open interval `[lower, upper)` and needs
`size` bytes at an offset that is a multiple of `alignment`.
`$MEMORACE_CASE_DIR/case.json` gives the `capacity` and the time limit.

## Output
Write `$MEMORACE_OUT_DIR/plan.csv` with the header `id,offset`, one row per buffer.

## Rules and score
A plan is valid iff every offset is a non-negative multiple of its buffer's
alignment, `offset + size <= capacity`, and no two buffers whose lifespans
intersect share a byte (`[a, b)` and `[b, c)` do not intersect). Its peak is
`max(offset + size)`; the case scores `lower_bound / peak`, where the lower
bound is the largest total size of buffers live at one time.

## Cases
{source}
"""


def import_minimalloc(
    source: Path,
    dest_root: Path,
    slug: str,
    capacity: int | None = None,
    hidden: frozenset[str] = frozenset(),
) -> Problem:
    """Write `dest_root/slug` from the *.csv files of `source` and validate it."""
    check_options(slug, dest_root, capacity)
    source = _path(source, "the folder")
    if not source.is_dir():
        raise PackageError("not found" if not source.exists() else "is not a folder", source)
    try:
        files = sorted(f for f in source.glob("*.csv") if f.is_file())
    except OSError as exc:
        raise PackageError(f"cannot read the folder: {exc.strerror}", source) from None
    if not files:
        raise PackageError("no *.csv case files found", source)

    def fill(staging: Path) -> None:
        check_hidden(hidden, [name_and_capacity(f)[0] for f in files], [f.stem for f in files])
        cases = [_stage_case(f, staging, capacity, hidden) for f in files]
        note = f"Imported with `memorace problem import-minimalloc` from `{Path(source).name}`."
        if (Path(source) / "LICENSE").is_file():
            shutil.copyfile(Path(source) / "LICENSE", staging / "LICENSE")
            note += " The cases' license is in `LICENSE`."
        write_offset_package(staging, slug, f"imported from {Path(source).name}", cases, note)

    return build_package(dest_root, slug, fill)


def build_package(dest_root: Path, slug: str, fill: Callable[[Path], None]) -> Problem:
    """Make `dest_root/slug` by `fill`ing a staging folder, validated before it is moved
    into place (a failed import leaves nothing behind)."""
    check_options(slug, dest_root, None)
    target = Path(dest_root) / slug
    if target.exists():
        raise PackageError("already exists; choose another --slug or remove it", target)
    try:
        Path(dest_root).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PackageError(f"cannot create the folder: {exc.strerror}", dest_root) from None
    try:
        with tempfile.TemporaryDirectory(dir=dest_root, prefix=f".{slug}-") as tmp:
            staging = Path(tmp) / slug
            staging.mkdir()
            fill(staging)
            problem = load_problem(staging)
            load_cases(problem)  # every case parses and is feasible at its capacity
            shutil.move(staging, target)
    except OSError as exc:  # --dest unwritable, a full disk, a source file unreadable
        where = exc.filename or dest_root
        raise PackageError(f"cannot write the package: {exc.strerror or exc}", where) from None
    return load_problem(target)


def check_files(files: list[Path], dest_root: Path) -> list[Path]:
    """The recordings an importer was given, refused when there are none or a path
    holds a NUL (the operating system would refuse it with a less useful message)."""
    if not files:
        raise PackageError("no files given", dest_root)
    return [_path(f, "FILE") for f in files]


def check_options(slug: str, dest_root: Path, capacity: int | None) -> None:
    """The options every importer takes, checked before any file is read."""
    if not SLUG.fullmatch(slug):
        raise PackageError(
            f"--slug {show_value(slug)}: a slug is 1 to 64 lowercase letters, digits and "
            "dashes, not starting with a dash (it names the package's folder)"
        )
    if capacity is not None and not 1 <= capacity <= INT_LIMIT:
        raise PackageError(f"--capacity {show_value(capacity)}: must be from 1 to 2^62 bytes")
    dest = _path(dest_root, "--dest")
    if dest.exists() and not dest.is_dir():
        raise PackageError("--dest is not a folder", dest)


def check_hidden(hidden: frozenset[str], names: list[str], aliases: Iterable[str] = ()) -> None:
    """Every --hidden NAME names a case (or one of its `aliases`): a typo would leave
    that case public."""
    unknown = sorted(hidden - set(names) - set(aliases))
    if unknown:
        known = ", ".join(sorted(set(names))[:20]) + (", ..." if len(set(names)) > 20 else "")
        raise PackageError(
            f"--hidden {show_value(unknown[0])}: no case has that name; the cases are: {known}"
        )


def _path(path: Path | str, what: str) -> Path:
    if "\0" in str(path):
        raise PackageError(f"{what}: a path cannot hold a NUL character")
    return Path(path)


def name_and_capacity(path: Path) -> tuple[str, int | None]:
    """MiniMalloc names cases NAME.CAPACITY.csv: the name, and the capacity if given."""
    match = _CAPACITY_IN_NAME.match(path.stem)
    return (match["name"], int(match["capacity"])) if match else (path.stem, None)


def _stage_case(
    path: Path, staging: Path, capacity: int | None, hidden: frozenset[str]
) -> dict[str, object]:
    name, from_name = name_and_capacity(path)
    if not CASE_NAME.fullmatch(name):
        raise PackageError(
            f"case name {show_value(name)} (from the file name) may use letters, digits, "
            "'.', '_', '-' (at most 100)",
            path.parent,
        )
    cap = capacity if capacity is not None else from_name
    if cap is None:
        raise PackageError(
            "no capacity in the file name (NAME.CAPACITY.csv); pass --capacity", path
        )
    split = "hidden" if name in hidden or path.stem in hidden else "public"
    dest = staging / "data" / split / f"{name}.csv"
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        shutil.copyfile(path, dest)
    except OSError as exc:
        raise PackageError(f"cannot read: {exc.strerror}", path) from None
    return {"name": name, "split": split, "capacity": cap, "weight": 1.0}


def write_offset_package(
    staging: Path, slug: str, origin: str, cases: list[dict[str, object]], note: str
) -> None:
    """problem.toml and a statement stub (`note` says where the cases came from)."""
    statement = STATEMENT.format(title=slug, source=note)
    write_package(staging, slug, origin, "offset", cases, statement)


def write_package(
    staging: Path,
    slug: str,
    origin: str,
    type_name: str,
    cases: list[dict[str, object]],
    statement: str,
) -> None:
    """An imported package's problem.toml (the importers' limits) and its statement."""
    doc = {
        "slug": slug,
        "name": f"{slug} ({origin})",
        "type": type_name,
        "version": 1,
        "limits": {"time_limit_s": 60.0, "memory_limit_mb": 2048, "cpus": 1, "gpus": 0},
        "cases": cases,
    }
    (staging / "problem.toml").write_bytes(tomli_w.dumps(doc).encode())
    (staging / "statement.md").write_text(statement)
