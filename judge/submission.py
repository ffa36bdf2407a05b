"""Turning an upload (one .py or .cpp file, or an archive) into files plus build and run commands.

Archives are unpacked by `judge.archive`; every refusal is a SubmissionError that names
the upload and says what is wrong in a contestant's words.
"""

from __future__ import annotations

import shlex
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path

from judge.archive import find_root, unpack_tar, unpack_zip
from judge.errors import SubmissionError

CXX_FLAGS = ("-O2", "-std=c++20")  # pinned: every C++ upload is built the same way
MANIFEST = "memorace.toml"
MANIFEST_KEYS = ("build", "run")
ACCEPTED = ".py, .cpp, .cc, .zip, .tar.gz or .tgz"

MIB = 1024 * 1024
MAX_INPUT_BYTES = 16 * MIB


@dataclass(frozen=True)
class Submission:
    root: Path  # a directory holding the submission's files (unpacked)
    language: str  # "python" | "cpp" | "archive"
    build: list[str] | None  # argv run once with cwd = a writable copy of root, or None
    run: list[str]  # argv run per case with cwd = that same writable copy


def prepare_submission(source: Path, dest: Path) -> Submission:
    """Copy or unpack `source` (a .py file, a .cpp/.cc file, or a .zip / .tar.gz / .tgz
    archive) into `dest` (an empty dir that this creates) and describe how to build and run it.

    On a SubmissionError, whatever was unpacked is removed again.
    """
    source, dest = Path(source), Path(dest)
    kind = _kind(source)
    _check_input_size(source)
    created = not dest.exists()
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise ValueError(f"{dest} must be empty")  # a judge bug, not the contestant's
    try:
        return _prepare(kind, source, dest)
    except BaseException:
        _discard(dest, created)
        raise


# Upload suffix -> kind of submission; the one table the judge and the service read.
SUFFIXES = {
    ".py": "python",
    ".cpp": "cpp",
    ".cc": "cpp",
    ".zip": "zip",
    ".tar.gz": "tar",
    ".tgz": "tar",
}


def upload_suffix(name: str) -> str | None:
    """The accepted suffix `name` ends with (case-insensitive), or None."""
    lower = name.lower()
    return next((s for s in SUFFIXES if lower.endswith(s)), None)


def _kind(source: Path) -> str:
    suffix = upload_suffix(source.name)
    if suffix is None:
        raise SubmissionError(f"unsupported file type; upload one of {ACCEPTED}", source.name)
    return SUFFIXES[suffix]


def _check_input_size(source: Path) -> None:
    try:
        size = source.stat().st_size
    except FileNotFoundError:
        raise SubmissionError("the uploaded file does not exist", source.name) from None
    if size > MAX_INPUT_BYTES:
        raise SubmissionError(
            f"the upload is {size / MIB:.1f} MiB; at most {MAX_INPUT_BYTES // MIB} MiB is allowed",
            source.name,
        )


def _prepare(kind: str, source: Path, dest: Path) -> Submission:
    if kind == "python":
        _copy_single(source, dest / "planner.py")
        return Submission(dest, "python", None, ["python3", "planner.py"])
    if kind == "cpp":
        _copy_single(source, dest / "planner.cpp")
        build = ["g++", *CXX_FLAGS, "-o", "planner", "planner.cpp"]
        return Submission(dest, "cpp", build, ["./planner"])
    if kind == "zip":
        unpack_zip(source, dest)
    else:
        unpack_tar(source, dest)
    _fix_dir_modes(dest)
    root = _find_root(source, dest)
    build, run = _read_manifest(source, root / MANIFEST)
    return Submission(root, "archive", build, run)


def _copy_single(source: Path, target: Path) -> None:
    shutil.copyfile(source, target)
    target.chmod(0o644)


def _fix_dir_modes(dest: Path) -> None:
    # mkdir's mode is cut by the umask; folders must be readable by the sandbox's user.
    for folder in [p for p in dest.rglob("*") if p.is_dir()]:
        folder.chmod(0o755)


def _discard(dest: Path, created: bool) -> None:
    if created:
        shutil.rmtree(dest, ignore_errors=True)
        return
    for child in dest.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


# --- memorace.toml -----------------------------------------------------------------------


def _find_root(source: Path, dest: Path) -> Path:
    """`dest` when it holds memorace.toml, else its single top-level folder when that does."""
    root = find_root(dest, MANIFEST)
    if root is not None:
        return root
    raise SubmissionError(
        f"{MANIFEST} not found: put it at the top level of the archive "
        "(or inside its single top-level folder)",
        source.name,
    )


def _read_manifest(source: Path, path: Path) -> tuple[list[str] | None, list[str]]:
    upload = source.name
    if not path.is_file():
        raise SubmissionError(f"{MANIFEST} must be a file", upload)
    try:
        table = tomllib.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        raise SubmissionError(f"{MANIFEST} is not valid UTF-8", upload) from None
    except tomllib.TOMLDecodeError as exc:
        raise SubmissionError(f"{MANIFEST} is not valid TOML: {exc}", upload) from None
    for key in table:
        if key not in MANIFEST_KEYS:
            allowed = ", ".join(MANIFEST_KEYS)
            raise SubmissionError(f"{MANIFEST}: unknown key {key!r} (allowed: {allowed})", upload)
    if "run" not in table:
        raise SubmissionError(
            f'{MANIFEST}: missing required key run (e.g. run = "./planner")', upload
        )
    build = _command(upload, table, "build") if "build" in table else None
    return build, _command(upload, table, "run")


def _command(upload: str, table: dict[str, object], key: str) -> list[str]:
    value = table[key]
    if not isinstance(value, str):
        raise SubmissionError(f"{MANIFEST}: {key} must be a string (a command line)", upload)
    try:
        argv = shlex.split(value)
    except ValueError as exc:  # e.g. an unclosed quote
        raise SubmissionError(
            f"{MANIFEST}: cannot split {key} = {value!r}: {exc}", upload
        ) from None
    if not argv:
        raise SubmissionError(f"{MANIFEST}: {key} is empty", upload)
    return argv
