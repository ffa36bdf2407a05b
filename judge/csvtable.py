"""Strict, bounded reading of the CSV tables cases and plans use: a string `id`
column followed by integer columns.

Contestants' files are hostile input: the reader caps the bytes it reads,
insists on UTF-8, an exact header and integer cells, and reports the first
problem with its line number. Well-formed files take a fast path (judge.csvscan:
numpy over the bytes, about a tenth of a second per million rows); anything else
takes a row-by-row path that finds and names the first fault.
"""

from __future__ import annotations

import codecs
import errno
import gc
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from judge.csvscan import Ids, scan
from judge.errors import InputError

# Every integer in a case or plan lies in [-2^62, 2^62], so that sums of two
# of them (offset + size, upper - lower) never overflow int64.
INT_LIMIT = 2**62
_INT_CELL = re.compile(r"-?[0-9]+")


@dataclass(frozen=True, eq=False)
class IdTable:
    """Rows of `id,int,int,...`; data row i sits on line i + 2."""

    path: str
    id_column: Ids  # the ids, decoded into strings only when asked for
    ints: dict[str, np.ndarray]  # column name -> int64 values
    # True when the ids were shown distinct, none with spaces around it (the fast path,
    # when asked); False leaves it to an exact check, which names the fault.
    plainly_distinct: bool = False

    @cached_property
    def ids(self) -> list[str]:
        return self.id_column.tolist()

    @property
    def id_text(self) -> str:
        """The ids joined by "," (ids hold no comma)."""
        return self.id_column.text()

    @staticmethod
    def line_of(row: int) -> int:
        return row + 2


def read_bounded(path: Path, limit: int, error: type[InputError]) -> bytes:
    """The bytes of regular file `path`, refusing files over `limit` without reading them.

    Links, fifos and devices are refused: a planner's output directory is hostile
    and must not make the judge read elsewhere or block."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise error("file not found", path) from None
    except OSError as exc:
        what = (
            "is a link, not a file" if exc.errno == errno.ELOOP else f"cannot read: {exc.strerror}"
        )
        raise error(what, path) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise error(f"is {kind}, not a file" if kind[0] == "a" else f"is {kind}", path)
    if info.st_size > limit:
        os.close(fd)
        raise error(f"file is {_human(info.st_size)}; the limit here is {_human(limit)}", path)
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:  # it grew while we read it
        raise error(f"file is over the limit of {_human(limit)}", path)
    return data


def parse_id_table(
    data: bytes,
    path: Path | str,
    required: tuple[str, ...],
    optional: tuple[str, ...],
    ranges: dict[str, tuple[int, int]],
    error: type[InputError],
    distinct_ids: bool = False,
) -> IdTable:
    """Parse `id,<int columns>` CSV bytes; every int column value within `ranges`. With
    `distinct_ids`, IdTable.plainly_distinct tells whether the ids were shown distinct."""
    data, start = _utf8(data, path, error)
    if b"\r" in data:
        data, start = _without_cr(data[start:], path, error), 0
    head_end = data.find(b"\n", start)
    head_end = len(data) if head_end < 0 else head_end
    header_line = data[start:head_end].decode()
    begin = min(head_end + 1, len(data))
    end = _rstrip_lf(data, begin)
    body = memoryview(data)[begin:end]  # no copy
    if not header_line.strip() and not bytes(body).decode().strip():
        raise error(f"file is empty; expected the header '{','.join(required)}'", path, 1)
    header = header_line.split(",")
    _check_header(header, required, optional, path, error)
    names = header[1:]
    table = _fast_table(data, begin, end, str(path), names, distinct_ids)
    table = table or _slow_table(body, header, str(path), error)
    for k, name in enumerate(names):
        bad = _first_out_of_range(table.ints[name], *ranges[name])
        if bad is not None:
            cell = bytes(body).decode().split("\n", bad + 1)[bad].split(",")[k + 1]
            lo, hi = ranges[name]
            message = f"column '{name}' is {show_cell(cell)}, outside [{lo}, {hi}]"
            raise error(message, path, table.line_of(bad))
    return table


def _utf8(data: bytes, path: Path | str, error: type[InputError]) -> tuple[bytes, int]:
    """`data` checked to be UTF-8, and where its text starts (past a byte order mark)."""
    if data.isascii():
        return data, 0
    _decode(data, path, error)
    return data, 3 if data.startswith(codecs.BOM_UTF8) else 0


def _without_cr(data: bytes, path: Path | str, error: type[InputError]) -> bytes:
    data = data.replace(b"\r\n", b"\n")
    lone = data.find(b"\r")
    if lone >= 0:  # old Mac line ends, or a stray byte: name it, not a field count
        line = data.count(b"\n", 0, lone) + 1
        raise error(
            "a lone carriage return (CR, \\r) inside the line: lines end with LF or CRLF",
            path,
            line,
        )
    return data


def _rstrip_lf(data: bytes, start: int) -> int:
    """The end of data[start:] without the line ends it finishes with (no copy unless
    the last 4 KiB are all line ends)."""
    tail = data[max(start, len(data) - 4096) :]
    kept = tail.rstrip(b"\n")
    if kept or len(tail) == len(data) - start:
        return len(data) - len(tail) + len(kept)
    return start + len(data[start:].rstrip(b"\n"))


def _fast_table(
    data: bytes, begin: int, end: int, path: str, names: list[str], distinct_ids: bool
) -> IdTable | None:
    if begin == end:
        return IdTable(path, Ids(""), {name: np.zeros(0, np.int64) for name in names}, True)
    found = scan(data, begin, end, len(names), distinct_ids)
    if found is None:
        return None
    ints = {name: found.values[k] for k, name in enumerate(names)}
    return IdTable(path, found.ids, ints, found.plainly_distinct)


def _slow_table(body: memoryview, header: list[str], path: str, error: type[InputError]) -> IdTable:
    ids, values = _slow_path(bytes(body).decode(), header, path, error)
    ints = {name: values[:, k] for k, name in enumerate(header[1:])}
    return IdTable(path, Ids(ids=ids), ints)


def _slow_path(
    body: str, header: list[str], path: str, error: type[InputError]
) -> tuple[list[str], np.ndarray]:
    """Row by row, to name the first fault (or to read 19-digit numbers exactly)."""
    with _gc_paused():
        rows = [line.split(",") for line in body.split("\n")] if body else []
        width = len(header)
        for i, cells in enumerate(rows):
            if len(cells) != width:
                got = "an empty line" if cells == [""] else f"{len(cells)} fields"
                raise error(f"expected {width} fields ({','.join(header)}), got {got}", path, i + 2)
            if not cells[0]:
                raise error("column 'id' is empty", path, i + 2)
            for name, cell in zip(header[1:], cells[1:], strict=True):
                if not _INT_CELL.fullmatch(cell):
                    what = (
                        "is empty" if cell == "" else f"must be an integer, got {show_cell(cell)}"
                    )
                    raise error(f"column '{name}' {what}", path, i + 2)
        ids = [cells[0] for cells in rows]
        clipped = [[_clip(c) for c in cells[1:]] for cells in rows]
        return ids, np.array(clipped, dtype=np.int64).reshape(len(rows), width - 1)


def _clip(cell: str) -> int:
    """Keep huge numbers out of int64 overflow (and out of int(), which refuses more than
    4,300 digits); the range check then names them by their text."""
    if len(cell.lstrip("-").lstrip("0")) > 19:
        return -(2**63) if cell[0] == "-" else 2**63 - 1
    return max(-(2**63), min(int(cell), 2**63 - 1))


def _first_out_of_range(values: np.ndarray, lo: int, hi: int) -> int | None:
    if not values.size or (lo <= int(values.min()) and int(values.max()) <= hi):
        return None  # the usual case: two passes, no temporary arrays
    bad = np.flatnonzero((values < lo) | (values > hi))
    return int(bad[0]) if bad.size else None


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Millions of small lists would trigger full collections again and again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _decode(data: bytes, path: Path | str, error: type[InputError]) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        detail = f"not UTF-8 text (byte {exc.start} is 0x{data[exc.start]:02x})"
        raise error(detail, path, line) from None


def _check_header(
    header: list[str],
    required: tuple[str, ...],
    optional: tuple[str, ...],
    path: Path | str,
    error: type[InputError],
) -> None:
    allowed = [*required, *optional]
    if header[: len(required)] != list(required) or header != allowed[: len(header)]:
        want = ",".join(required) + "".join(f"[,{o}]" for o in optional)
        raise error(f"header must be '{want}', got '{','.join(header)[:80]}'", path, 1)


def show_cell(cell: str) -> str:
    """A cell quoted for an error message, cut to 40 characters."""
    return repr(cell if len(cell) <= 40 else cell[:37] + "...")


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"
