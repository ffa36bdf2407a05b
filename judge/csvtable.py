"""Strict, bounded reading of the CSV tables cases and plans use: a string `id`
column followed by integer columns.

Contestants' files are hostile input: the reader caps the bytes it reads,
insists on UTF-8, an exact header and integer cells, and reports the first
problem with its line number. Well-formed files take a fast path (one regex
over the whole text, numpy for the numbers: about a second per million rows);
anything else takes a row-by-row path that finds and names the first fault.
"""

from __future__ import annotations

import errno
import gc
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from judge.errors import InputError

# Every integer in a case or plan lies in [-2^62, 2^62], so that sums of two
# of them (offset + size, upper - lower) never overflow int64.
INT_LIMIT = 2**62
_INT_CELL = re.compile(r"-?[0-9]+")
_ID_PREFIX = re.compile(r"^[^,\n]+,", re.MULTILINE)
_ID_CELL = re.compile(r"^([^,\n]+),", re.MULTILINE)


@dataclass(frozen=True)
class IdTable:
    """Rows of `id,int,int,...`; data row i sits on line i + 2."""

    path: str
    ids: list[str]
    ints: dict[str, np.ndarray]  # column name -> int64 values

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
) -> IdTable:
    """Parse `id,<int columns>` CSV bytes; every int column value within `ranges`."""
    text = _decode(data, path, error)
    if "\r" in text:
        text = text.replace("\r\n", "\n")
        lone = text.find("\r")
        if lone >= 0:  # old Mac line ends, or a stray byte: name it, not a field count
            line = text.count("\n", 0, lone) + 1
            raise error(
                "a lone carriage return (CR, \\r) inside the line: lines end with LF or CRLF",
                path,
                line,
            )
    header_line, _, body = text.partition("\n")
    body = body.rstrip("\n")
    if not header_line.strip() and not body.strip():
        raise error(f"file is empty; expected the header '{','.join(required)}'", path, 1)
    header = header_line.split(",")
    _check_header(header, required, optional, path, error)
    names = header[1:]
    parsed = _fast_path(body, len(names)) or _slow_path(body, header, str(path), error)
    ids, values = parsed
    table = IdTable(str(path), ids, {name: values[:, k] for k, name in enumerate(names)})
    for k, name in enumerate(names):
        bad = _first_out_of_range(table.ints[name], *ranges[name])
        if bad is not None:
            cell = body.split("\n", bad + 1)[bad].split(",")[k + 1]
            lo, hi = ranges[name]
            message = f"column '{name}' is {show_cell(cell)}, outside [{lo}, {hi}]"
            raise error(message, path, table.line_of(bad))
    return table


def _fast_path(body: str, width: int) -> tuple[list[str], np.ndarray] | None:
    """Ids and an (n, width) int64 array when every row is plainly well formed
    (at most 18 digits per number, so it fits int64); None otherwise."""
    if not body:
        return [], np.zeros((0, width), dtype=np.int64)
    row = r"[^,\n]+" + r",-?[0-9]{1,18}" * width
    if not re.fullmatch(f"{row}(?:\n{row})*", body):
        return None
    ids = _ID_CELL.findall(body)
    numbers = _ID_PREFIX.sub("", body).replace("\n", ",")
    values = np.fromstring(numbers, dtype=np.int64, sep=",")  # exact integer parsing
    return ids, values.reshape(len(ids), width)


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
