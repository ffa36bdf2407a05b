"""Strict, bounded reading of the small integer CSV tables cases and plans use.

Contestants' files are hostile input: the reader caps the bytes it reads,
insists on UTF-8, an exact header and integer cells, and reports the first
problem with its line number. It is linear in the file size and uses numpy
for the integer columns, so a million-row plan parses in about a second.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from judge.errors import InputError

# Every integer in a case or plan lies in [-2^62, 2^62], so that sums of two
# of them (offset + size, upper - lower) never overflow int64.
INT_LIMIT = 2**62
_INT_COLUMN = re.compile(r"(?:-?[0-9]{1,19}\n)*-?[0-9]{1,19}")
_INT_CELL = re.compile(r"-?[0-9]+")


@dataclass(frozen=True)
class Table:
    """Columns of a CSV file as strings; data row i sits on line i + 2."""

    path: str
    columns: dict[str, list[str]]
    n_rows: int

    def line_of(self, row: int) -> int:
        return row + 2


def read_bounded(path: Path, limit: int, error: type[InputError]) -> bytes:
    """The file's bytes, refusing files over `limit` without reading them."""
    try:
        size = path.stat().st_size
        if size > limit:
            raise error(f"file is {_human(size)}; the limit here is {_human(limit)}", path)
        with path.open("rb") as fh:
            data = fh.read(limit + 1)
    except FileNotFoundError:
        raise error("file not found", path) from None
    except IsADirectoryError:
        raise error("is a directory, not a file", path) from None
    except OSError as exc:
        raise error(f"cannot read: {exc.strerror}", path) from None
    if len(data) > limit:  # it grew while we read it
        raise error(f"file is over the limit of {_human(limit)}", path)
    return data


def parse_table(
    data: bytes,
    path: Path | str,
    required: tuple[str, ...],
    optional: tuple[str, ...],
    error: type[InputError],
) -> Table:
    """Split CSV bytes into named string columns, checking shape and header."""
    text = _decode(data, path, error)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
    expected = ",".join(required)
    if not lines or not lines[0].strip():
        raise error(f"file is empty; expected the header '{expected}'", path, 1)
    header = lines[0].split(",")
    _check_header(header, required, optional, path, error)
    rows = [ln.split(",") for ln in lines[1:]]
    width = len(header)
    if any(len(r) != width for r in rows):
        i = next(i for i, r in enumerate(rows) if len(r) != width)
        got = "an empty line" if rows[i] == [""] else f"{len(rows[i])} fields"
        raise error(f"expected {width} fields ({','.join(header)}), got {got}", path, i + 2)
    columns: dict[str, list[str]] = {name: [] for name in header}
    for name, col in zip(header, zip(*rows, strict=True), strict=False):
        columns[name] = list(col)
    return Table(str(path), columns, len(rows))


def int_column(table: Table, name: str, error: type[InputError], lo: int, hi: int) -> np.ndarray:
    """Column `name` as int64, every value an integer in [lo, hi]."""
    cells = table.columns[name]
    if not cells:
        return np.zeros(0, dtype=np.int64)
    if not _INT_COLUMN.fullmatch("\n".join(cells)):
        _raise_first_bad_cell(table, name, error)
    try:
        values = np.array(cells).astype(np.int64)
    except OverflowError:
        values = None
    if values is None:
        row = next(i for i, c in enumerate(cells) if not -(2**63) <= int(c) < 2**63)
        raise _range_error(table, name, row, lo, hi, error)
    bad = np.flatnonzero((values < lo) | (values > hi))
    if bad.size:
        raise _range_error(table, name, int(bad[0]), lo, hi, error)
    return values


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
    names = [h.strip() for h in header]
    allowed = [*required, *optional]
    ok = names[: len(required)] == list(required) and names == allowed[: len(names)]
    if not ok or names != header:
        want = ",".join(required) + "".join(f"[,{o}]" for o in optional)
        raise error(f"header must be '{want}', got '{','.join(header)[:80]}'", path, 1)


def _raise_first_bad_cell(table: Table, name: str, error: type[InputError]) -> None:
    for i, cell in enumerate(table.columns[name]):
        if not _INT_CELL.fullmatch(cell) or len(cell.lstrip("-")) > 19:
            what = "is empty" if cell == "" else f"must be an integer, got {_show(cell)}"
            raise error(f"column '{name}' {what}", table.path, table.line_of(i))
    raise AssertionError("unreachable: the column regex and the cell regex disagree")


def _range_error(
    table: Table, name: str, row: int, lo: int, hi: int, error: type[InputError]
) -> InputError:
    cell = table.columns[name][row]
    return error(
        f"column '{name}' is {_show(cell)}, outside [{lo}, {hi}]", table.path, table.line_of(row)
    )


def _show(cell: str) -> str:
    return repr(cell if len(cell) <= 40 else cell[:37] + "...")


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024
    return f"{n} B"
