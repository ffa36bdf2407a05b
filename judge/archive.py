"""Defensive unpacking of contestants' zip and tar.gz archives, with the stdlib only.

No paths outside the destination, no links, no device files, bounded member count and
bounded unpacked size. Sizes are checked from the headers first (cheap, catches most zip
bombs) and again while writing, since headers can lie.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import io
import os
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, NoReturn, Protocol

from judge.errors import SubmissionError

MIB = 1024 * 1024
MAX_MEMBERS = 1000
MAX_TOTAL_BYTES = 64 * MIB
MAX_MEMBER_BYTES = 64 * MIB
CHUNK_BYTES = MIB
# Tar metadata (headers, long names, pax records) is read into memory by tarfile, so the
# decompressed stream as a whole is capped too: contents plus generous room for headers.
MAX_TAR_STREAM_BYTES = MAX_TOTAL_BYTES + 8 * MIB
# Junk that macOS adds to zips; ignored when looking for the single top-level folder.
TOP_LEVEL_JUNK = frozenset({"__MACOSX", ".DS_Store"})
# Write errors caused by the archive's own layout (a file where a folder should be, ...),
# as opposed to judge trouble such as a full disk, which must not become a contestant error.
LAYOUT_ERRNOS = frozenset({errno.EEXIST, errno.ENOTDIR, errno.EISDIR, errno.ENAMETOOLONG})


def find_root(folder: Path, marker: str) -> Path | None:
    """Where an unpacked upload keeps `marker` (memorace.toml, problem.toml): `folder`
    itself, or its single top-level folder, ignoring macOS junk (`TOP_LEVEL_JUNK`);
    None when neither holds it. The one rule for submissions and problem packages."""
    if (folder / marker).exists():
        return folder
    top = [p for p in folder.iterdir() if p.name not in TOP_LEVEL_JUNK]
    if len(top) == 1 and top[0].is_dir() and (top[0] / marker).exists():
        return top[0]
    return None


class _Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


# --- member checks shared by zip and tar -------------------------------------------------


def _member_parts(upload: str, name: str) -> tuple[str, ...]:
    """The path components of a member name, refusing anything that could leave `dest`."""
    if "\0" in name:
        raise SubmissionError(f"archive member name contains a NUL byte: {name!r}", upload)
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # tarfile keeps undecodable bytes as surrogates
        raise SubmissionError(f"archive member name is not valid UTF-8: {name!r}", upload) from None
    if name.startswith(("/", "\\")):
        raise SubmissionError(f"archive member has an absolute path: {name}", upload)
    # Backslashes count as separators here so a Windows-made "..\\x" is refused too.
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise SubmissionError(f"archive member points outside the archive ('..'): {name}", upload)
    return tuple(parts)


def _check_member_count(upload: str, count: int) -> None:
    if count > MAX_MEMBERS:
        raise SubmissionError(f"archive has more than {MAX_MEMBERS} files and folders", upload)


def _too_big(upload: str) -> SubmissionError:
    return SubmissionError(f"archive unpacks to more than {MAX_TOTAL_BYTES // MIB} MiB", upload)


def _check_member_size(upload: str, name: str, size: int) -> None:
    if size > MAX_MEMBER_BYTES:
        raise SubmissionError(
            f"archive member is larger than {MAX_MEMBER_BYTES // MIB} MiB: {name}", upload
        )


def _declare(upload: str, name: str, size: int, declared: int) -> int:
    """The running total of header-declared sizes, refusing it past the limits."""
    declared += size
    if declared > MAX_TOTAL_BYTES:  # first: a bomb reads as "unpacks to more than"
        raise _too_big(upload)
    _check_member_size(upload, name, size)
    return declared


class _Budget:
    """Bytes written so far, so that data beyond what the headers declared stops early."""

    def __init__(self, upload: str):
        self.upload = upload
        self.total = 0

    def spend(self, name: str, member_bytes: int, chunk: int) -> None:
        self.total += chunk
        if self.total > MAX_TOTAL_BYTES:
            raise _too_big(self.upload)
        _check_member_size(self.upload, name, member_bytes)


def _make_dir(upload: str, dest: Path, parts: tuple[str, ...]) -> None:
    try:
        dest.joinpath(*parts).mkdir(mode=0o755, parents=True, exist_ok=True)
    except OSError as exc:
        _layout_error(upload, "/".join(parts), exc)


def _write_file(
    upload: str,
    dest: Path,
    parts: tuple[str, ...],
    executable: bool,
    source: _Readable,
    budget: _Budget,
) -> None:
    """Copy one member in chunks; permissions are ours (0o644/0o755), never the archive's."""
    name = "/".join(parts)
    target = dest.joinpath(*parts)
    try:
        target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(target, flags, 0o600)
    except OSError as exc:
        _layout_error(upload, name, exc)
    with os.fdopen(fd, "wb") as out:
        written = 0
        while chunk := source.read(CHUNK_BYTES):
            written += len(chunk)
            budget.spend(name, written, len(chunk))
            out.write(chunk)
        os.fchmod(out.fileno(), 0o755 if executable else 0o644)


def _detail(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _layout_error(upload: str, name: str, exc: OSError) -> NoReturn:
    if exc.errno not in LAYOUT_ERRNOS:
        raise exc
    raise SubmissionError(f"cannot unpack {name}: {exc.strerror}", upload) from None


# --- zip ---------------------------------------------------------------------------------

# What a damaged zip raises from inside zipfile / zlib while listing or reading; OSError is
# among them because a corrupt directory can send zipfile seeking to a bad offset (EINVAL).
_ZIP_DAMAGE = (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError)


@contextlib.contextmanager
def _reading_zip(upload: str) -> Iterator[None]:
    """Errors while *reading* the upload mean a broken zip. Never wrapped around writes, so a
    judge-side failure (a full disk) is not blamed on the contestant."""
    try:
        yield
    except UnicodeDecodeError:
        raise SubmissionError("a file name in the archive is not valid UTF-8", upload) from None
    except _ZIP_DAMAGE as exc:
        raise SubmissionError(f"not a valid zip archive ({_detail(exc)})", upload) from None


class _ZipMemberReader:
    """A member's data, read through _reading_zip."""

    def __init__(self, stream: IO[bytes], upload: str):
        self.stream, self.upload = stream, upload

    def read(self, size: int = -1) -> bytes:
        with _reading_zip(self.upload):
            return self.stream.read(size)


def unpack_zip(source: Path, dest: Path) -> None:
    upload = source.name
    with _reading_zip(upload):
        # Names without the zip UTF-8 flag are decoded as UTF-8 too (not cp437), so that
        # undecodable names fail here instead of turning into mojibake.
        archive = zipfile.ZipFile(source, metadata_encoding="utf-8")
    with archive:
        entries = _zip_entries(upload, archive.infolist())
        budget = _Budget(upload)
        for info, parts, is_dir, executable in entries:
            if is_dir:
                _make_dir(upload, dest, parts)
                continue
            with _reading_zip(upload):
                stream = archive.open(info)
            with stream:
                reader = _ZipMemberReader(stream, upload)
                _write_file(upload, dest, parts, executable, reader, budget)


def _zip_entries(
    upload: str, infos: list[zipfile.ZipInfo]
) -> list[tuple[zipfile.ZipInfo, tuple[str, ...], bool, bool]]:
    """Check every member from the central directory before anything is written."""
    _check_member_count(upload, len(infos))
    entries, declared = [], 0
    for info in infos:
        parts = _member_parts(upload, info.orig_filename)  # zipfile cuts names at a NUL
        mode = info.external_attr >> 16 if info.create_system == 3 else 0  # 3: Unix
        _check_file_type(upload, info.filename, stat.S_IFMT(mode))
        if info.flag_bits & 0x1:
            raise SubmissionError(
                f"encrypted archive members are not allowed: {info.filename}", upload
            )
        is_dir = info.is_dir() or stat.S_ISDIR(mode)
        if not is_dir:
            declared = _declare(upload, info.filename, info.file_size, declared)
        if not parts and not is_dir:
            raise SubmissionError(f"archive member has no file name: {info.filename!r}", upload)
        if parts:
            entries.append((info, parts, is_dir, bool(mode & 0o111)))
    return entries


def _check_file_type(upload: str, name: str, fmt: int) -> None:
    """Only plain files and folders; `fmt` is stat.S_IFMT of the mode, 0 when unknown."""
    if fmt in (0, stat.S_IFREG, stat.S_IFDIR):
        return
    if fmt == stat.S_IFLNK:
        raise SubmissionError(f"links are not allowed: {name}", upload)
    raise SubmissionError(f"device files and fifos are not allowed: {name}", upload)


# --- tar.gz ------------------------------------------------------------------------------


class _CappedReader:
    """A read-only stream that refuses to yield more than `cap` bytes in total.

    tarfile reads long-name and pax headers whole into memory and decompresses whatever it
    skips, so a tiny .tar.gz could otherwise make it chew through gigabytes.
    """

    def __init__(self, raw: IO[bytes], cap: int, on_exceed: Callable[[], Exception]):
        self.raw, self.left, self.on_exceed = raw, cap, on_exceed

    def read(self, size: int = -1) -> bytes:
        want = self.left + 1 if size is None or size < 0 else min(size, self.left + 1)
        data = self.raw.read(want)
        self.left -= len(data)
        if self.left < 0:
            raise self.on_exceed()
        return data


# What a damaged .tar.gz raises from inside tarfile / gzip / zlib while reading.
_TAR_DAMAGE = (tarfile.TarError, gzip.BadGzipFile, zlib.error, EOFError)


def unpack_tar(source: Path, dest: Path) -> None:
    upload = source.name
    try:
        with gzip.open(source, "rb") as unzipped:
            capped = _CappedReader(unzipped, MAX_TAR_STREAM_BYTES, lambda: _too_big(upload))
            # "r|": one forward pass, so nothing is decompressed twice and nothing is seeked.
            with tarfile.open(
                fileobj=capped, mode="r|", encoding="utf-8", errors="surrogateescape"
            ) as archive:
                _unpack_tar_members(upload, archive, dest)
    except _TAR_DAMAGE as exc:
        raise SubmissionError(f"not a valid .tar.gz archive ({_detail(exc)})", upload) from None


def _unpack_tar_members(upload: str, archive: tarfile.TarFile, dest: Path) -> None:
    budget, count, declared = _Budget(upload), 0, 0
    for member in archive:
        count += 1
        _check_member_count(upload, count)
        parts = _member_parts(upload, member.name)
        _check_tar_type(upload, member)
        if member.isdir():
            if parts:
                _make_dir(upload, dest, parts)
            continue
        # Checked before the member's data is decompressed at all.
        declared = _declare(upload, member.name, member.size, declared)
        if not parts:
            raise SubmissionError(f"archive member has no file name: {member.name!r}", upload)
        data = archive.extractfile(member)
        assert data is not None  # a regular file, checked above
        _write_file(upload, dest, parts, bool(member.mode & 0o111), data, budget)


def _check_tar_type(upload: str, member: tarfile.TarInfo) -> None:
    if member.issym() or member.islnk():
        raise SubmissionError(f"links are not allowed: {member.name}", upload)
    if member.ischr() or member.isblk() or member.isfifo():
        raise SubmissionError(f"device files and fifos are not allowed: {member.name}", upload)
    if member.issparse():
        raise SubmissionError(f"sparse files are not allowed: {member.name}", upload)
    if not (member.isreg() or member.isdir()):
        raise SubmissionError(f"unsupported kind of archive member: {member.name}", upload)


# --- packing: the reference planners' archives -------------------------------------------


def pack_tar_gz(members: Mapping[str, bytes]) -> bytes:
    """A .tar.gz of `members` ({name: contents}) made the same way every time: members
    sorted by name, mode 0644, time 0, no owner, gzip time 0. Another zlib may still
    compress the same tar to other bytes, so whether an archive is current is told by
    `tar_members`, never by its compressed bytes (reference_solutions/*/pack.py)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(members):
            data = members[name]
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)


def tar_members(archive: Path) -> dict[str, bytes]:
    """{name: contents} of the regular files of a trusted archive (one we packed)."""
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def packed_current(archive: Path, members: Mapping[str, bytes]) -> bool:
    """Whether `archive` holds exactly `members` (names and bytes; see pack_tar_gz)."""
    return archive.is_file() and tar_members(archive) == dict(members)


def folder_members(folder: Path, patterns: Iterable[str]) -> dict[str, bytes]:
    """{name: contents} of the files of `folder` matching `patterns` (names of the folder's
    top level), never its packer: what a reference planner's archive holds."""
    files = {p for pattern in patterns for p in folder.glob(pattern) if p.name != "pack.py"}
    return {path.name: path.read_bytes() for path in sorted(files)}


def write_packed(data: bytes, argv: list[str], default: Path) -> None:
    """A packer's command line: write `data` to argv[1] or `default`; say where."""
    out = Path(argv[1]) if len(argv) > 1 else default
    out.write_bytes(data)
    print(f"wrote {out}")
