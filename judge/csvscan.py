"""The fast path of judge.csvtable: well-formed `id,int,...` rows read by numpy alone.

A million-row table must read in a fraction of a second, so no Python object is made per
cell: the separators are found in one pass over the bytes, each integer cell is read
eight digits at a time (the digits of a cell as one 64-bit word, combined by three
multiplications: the SWAR method of simdjson and fast_float), and the ids come out as one
row of bytes each (an Ids, decoded into strings only when something asks for them).
Anything not plainly well formed (a cell with more than 18 digits, an
empty line, a stray character) gives None: csvtable then reads the table row by row and
names the first fault, so the messages do not depend on this module.
"""

from __future__ import annotations

import ctypes
import operator
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

COMMA, NEWLINE, MINUS = 0x2C, 0x0A, 0x2D
_ZEROS = np.uint64(0x3030303030303030)  # eight '0' characters
# Added to a byte under 0x80, 0x46 sets its high bit exactly when the byte is over '9'.
_OVER_NINE = np.uint64(0x4646464646464646)
_HIGH_BITS = 0x8080808080808080
# Bytes an id may not start or end with for the quick check: ASCII whitespace as
# str.strip() sees it, and every non-ASCII byte (a multi-byte character may be a space).
_EDGE = np.zeros(256, bool)
_EDGE[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True
_EDGE[128:] = True
# For a cell of c digits (1 to 8; 9 to 18 as 8) read as the high c bytes of a word: the
# bytes to keep, and '0' characters for the bytes below them (read as leading zeros).
_KEEP = np.array([0] + [2**64 - 2 ** (8 * (8 - min(c, 8))) for c in range(1, 19)], np.uint64)
_FILL = _ZEROS & ~_KEEP
# For c bytes of an id in a word (0 to 8): the bytes to keep, the low c.
_LOW = np.array([2 ** (8 * c) - 1 for c in range(9)], np.uint64)
# Odd 64-bit constants, one per word of an id: a key is the sum of word x constant, so
# words of zeros past the end of an id add nothing, however many a block reads.
_MIX = np.array([0x9E3779B97F4A7C15 + 2 * k for k in range(8)], np.uint64)
_KEY_BYTES = 8 * len(_MIX)  # longer ids get no keys (the caller's exact check takes over)
_BLOCK = 1 << 20  # bytes per block: small arrays stay in cache and their memory is reused


class Ids(Sequence[str]):
    """A table's ids, read-only and list-like, held as the scan found them: one row of
    bytes per id (zeros past its end) and its length in bytes, or all of them joined by
    "," (ids hold no comma). An id becomes a string only when it is asked for: a million
    Python strings cost more than the rest of reading their table.

    Equal to another Ids or to a list of the same strings in the same order."""

    def __init__(
        self,
        text: str | None = None,
        rows: np.ndarray | None = None,
        length: np.ndarray | None = None,
        ids: list[str] | None = None,
    ):
        self._text = text  # the ids joined by ","
        self._rows, self._length = rows, length  # (n, w) uint8, (n,) int64
        self._list = ids
        if ids is not None:
            self._n = len(ids)
        elif length is not None:
            self._n = len(length)
        else:
            self._n = text.count(",") + 1 if text else 0

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):  # type: ignore[override]  # int -> str, slice -> list
        if isinstance(i, slice):
            if self._list is None and self._rows is not None:
                return [self[k] for k in range(*i.indices(self._n))]
            return self.tolist()[i]
        i = operator.index(i)
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError("id index out of range")
        if self._list is None and self._rows is not None:
            return self._rows[i, : self._length[i]].tobytes().decode()
        return self.tolist()[i]

    def __iter__(self) -> Iterator[str]:
        return iter(self.tolist())

    def __contains__(self, value: object) -> bool:
        return value in self.tolist()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Ids):
            if self._n != other._n:
                return False
            if self._rows is not None and other._rows is not None:
                return (
                    self._rows.shape == other._rows.shape
                    and np.array_equal(self._length, other._length)
                    and np.array_equal(self._rows, other._rows)
                )
            return self.text() == other.text()
        if isinstance(other, (list, tuple)):
            return self._n == len(other) and self.tolist() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable-looking, like a list

    def __repr__(self) -> str:
        return f"Ids({self.tolist()!r})"

    def tolist(self) -> list[str]:
        if self._list is None:
            text = self.text()
            self._list = text.split(",") if text else []
        return self._list

    def text(self) -> str:
        """The ids joined by ","."""
        if self._text is None:
            if self._rows is not None:
                self._text = _rows_text(self._rows, self._length)
            else:
                self._text = ",".join(self._list or [])
        return self._text

    def chars(self) -> int:
        """How many characters the ids have, all together."""
        if self._rows is not None:
            # every byte of a UTF-8 character but its continuation bytes (0b10xxxxxx)
            continued = np.count_nonzero((self._rows & 0xC0) == 0x80) if self._rows.size else 0
            return int(self._length.sum()) - int(continued)
        if self._list is not None:
            return sum(map(len, self._list))
        return len(self.text()) - max(self._n - 1, 0)


def _rows_text(rows: np.ndarray, length: np.ndarray) -> str:
    """Ids held as rows of bytes, joined by ","."""
    n, width = rows.shape
    if not n:
        return ""
    framed = np.zeros((n, width + 1), np.uint8)
    framed[:, :width] = rows
    framed[np.arange(n), length] = COMMA
    chosen = framed[np.arange(width + 1) <= length[:, None]]
    return chosen.tobytes()[:-1].decode()


@dataclass(frozen=True, eq=False)
class Scan:
    ids: Ids
    values: np.ndarray  # (columns, rows) int64
    plainly_distinct: bool  # the ids are certainly distinct, none with spaces around it


def scan(data: bytes, begin: int, end: int, width: int, keys: bool = False) -> Scan | None:
    """Rows `id,int,...,int` in data[begin:end] (`width` ints of -?[0-9]{1,18}, ids of
    anything but a comma or a line end, rows joined by LF, no LF after the last) when the
    bytes are exactly that; None when they are not, or when they are under 8 bytes.
    With `keys`, a 64-bit key per id shows them distinct when no two keys are equal."""
    if end - begin < 8:
        return None
    _keep_freed_memory()
    array = np.frombuffer(data, np.uint8)
    rows = 1 + _count(array, NEWLINE, begin, end)
    block = _Block(array, width, keys)
    values = np.empty((width, rows), np.int64)
    key = np.empty(rows if keys else 0, np.uint64)
    parts: list[tuple[np.ndarray, np.ndarray] | str] = []
    row, at = 0, begin
    while at <= end:  # blocks of whole lines
        stop = data.find(b"\n", min(at + _BLOCK, end), end)
        stop = end if stop < 0 else stop
        done = block.scan(at, stop, values[:, row:], key[row:])
        if done is None:
            return None
        parts.append(done[1])
        row, at = row + done[0], stop + 1
    if row != rows:
        return None
    key.sort()
    distinct = keys and block.keyed and not (key[1:] == key[:-1]).any()
    return Scan(_ids(parts, rows), values, distinct)


def _ids(parts: list[tuple[np.ndarray, np.ndarray] | str], n: int) -> Ids:
    """The ids of every block (rows of bytes and lengths, or text) as one Ids: rows when
    every block has them and padding them to one width costs no more than 4 bytes per
    byte of id (and comma), text otherwise."""
    blocks = [p for p in parts if not isinstance(p, str)]
    if len(blocks) == len(parts):
        width = max(r.shape[1] for r, _ in blocks)
        total = sum(int(length.sum()) for _, length in blocks) + n
        if n * width <= 4 * total:
            lengths = np.concatenate([length for _, length in blocks])
            if all(r.shape[1] == width for r, _ in blocks):
                return Ids(rows=np.concatenate([r for r, _ in blocks]), length=lengths)
            rows = np.zeros((n, width), np.uint8)
            at = 0
            for r, _ in blocks:
                rows[at : at + len(r), : r.shape[1]] = r
                at += len(r)
            return Ids(rows=rows, length=lengths)
    text = [p if isinstance(p, str) else _rows_text(*p) for p in parts]
    return Ids(",".join(text))


def _count(data: np.ndarray, byte: int, begin: int, end: int) -> int:
    """How many times `byte` is in data[begin:end]: numpy, a block at a time, is several
    times faster than bytes.count."""
    blocks = range(begin, end, _BLOCK)
    return sum(int(np.count_nonzero(data[at : min(at + _BLOCK, end)] == byte)) for at in blocks)


@cache
def _keep_freed_memory() -> None:
    """Ask glibc's malloc to keep freed memory for reuse. By default it hands the top of
    the heap back to the kernel once a few MiB are free, so every block of a scan (about
    10 MiB of numpy temporaries) would take fresh pages from the kernel again: on the
    judge's machines that page faulting took half of a 1M-row scan. Arrays under 32 MiB
    now come from the heap, and up to 64 MiB of freed memory stays with the process.
    No-op where malloc is not glibc's."""
    try:
        mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    except (OSError, TypeError):  # no C library to load by that name (not Linux)
        return
    if mallopt is not None:
        mallopt(-3, 32 * 2**20)  # M_MMAP_THRESHOLD: the most glibc allows
        mallopt(-1, 64 * 2**20)  # M_TRIM_THRESHOLD


class _Block:
    """Scans whole lines of the bytes, block by block."""

    def __init__(self, data: np.ndarray, width: int, keys: bool):
        self.data, self.width = data, width
        self.words = _words(data)
        self.keyed = keys  # until an id is too long or has a doubtful edge

    def scan(
        self, at: int, stop: int, values: np.ndarray, key: np.ndarray
    ) -> tuple[int, tuple[np.ndarray, np.ndarray] | str] | None:
        """The lines in data[at:stop] into `values` (and `key`): how many, and their ids
        (rows of bytes and lengths, or joined by ","); None when they are not plainly well
        formed."""
        data, width = self.data, self.width
        cuts, found = _separators(data[at:stop])
        rows, extra = divmod(len(cuts) + 1, width + 1)
        if extra:
            return None
        marks = np.empty(rows * (width + 1), np.uint8)
        marks[:-1], marks[-1] = found, NEWLINE
        marks = marks.reshape(rows, width + 1)  # each row: its commas, then its line end
        if not (marks[:, :width] == COMMA).all() or not (marks[:, width] == NEWLINE).all():
            return None
        grid = np.empty(rows * (width + 1), np.int64)
        np.add(cuts, at, out=grid[:-1])
        grid[-1] = stop
        grid = grid.reshape(rows, width + 1)
        line = np.empty(rows, np.int64)
        line[0], line[1:] = at, grid[:-1, width] + 1
        comma = grid[:, 0]
        if (comma <= line).any():  # an empty id
            return None
        by_column = np.ascontiguousarray(grid.T)  # each cell's end: the separator after it
        start, cell_end = (by_column[:width] + 1).ravel(), by_column[1:].ravel()
        if not _integers(data, self.words, start, cell_end, values[:, :rows]):
            return None
        ids = _id_rows(data, line, comma)
        if self.keyed:
            self._keys(line, comma, ids, key[:rows])
        return rows, ids if ids is not None else _joined(data, line, comma)

    def _keys(
        self,
        start: np.ndarray,
        stop: np.ndarray,
        ids: tuple[np.ndarray, np.ndarray] | None,
        key: np.ndarray,
    ) -> None:
        """A 64-bit key per id, equal for equal ids, into `key`."""
        data = self.data
        if _EDGE[data[start]].any() or _EDGE[data[stop - 1]].any():
            self.keyed = False  # a space, or a non-ASCII character, at an edge
            return
        if -(-int((stop - start).max()) // 8) * 8 > _KEY_BYTES:
            self.keyed = False
            return
        found = ids if ids is not None else _id_rows(data, start, stop, bounded=False)
        assert found is not None  # unbounded: always rows
        words = found[0].view("<u8")  # (ids, width / 8)
        np.multiply(words[:, 0], _MIX[0], out=key)
        for k in range(1, words.shape[1]):
            key += words[:, k] * _MIX[k]


def _id_rows(
    data: np.ndarray, start: np.ndarray, stop: np.ndarray, bounded: bool = True
) -> tuple[np.ndarray, np.ndarray] | None:
    """The ids data[start:stop] as rows of bytes (zeros past each id's end, rows a
    multiple of 8 bytes wide) and their lengths. None, when `bounded`, if the ids'
    lengths differ so much that the rows would take over 4 bytes per byte of id (and
    comma)."""
    length = stop - start
    width = -(-int(length.max()) // 8) * 8
    if bounded and len(length) * width > 4 * (int(length.sum()) + len(length)):
        return None
    rows = _rows(data, start, width)
    words = rows.view("<u8")
    for k in range(width // 8):
        words[:, k] &= _LOW[np.clip(length - 8 * k, 0, 8)]  # bytes past the id: 0
    return rows, length


def _joined(data: np.ndarray, start: np.ndarray, stop: np.ndarray) -> str:
    """The ids data[start:stop], joined by ","."""
    length = stop - start + 1  # each with the comma after it
    total, width = int(length.sum()), -(-int(length.max()) // 8) * 8
    if len(length) * width <= 4 * total:  # ids of like lengths: one row of bytes each
        rows = _rows(data, start, width)
        chosen = rows[np.arange(width) < length[:, None]]
    else:  # a few long ids among short ones: byte by byte
        before = np.cumsum(length) - length
        chosen = data[np.arange(total) + np.repeat(start - before, length)]
    return chosen.tobytes()[:-1].decode()


def _separators(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of every comma and line end, ascending, and those bytes."""
    at = np.flatnonzero(data <= COMMA)  # one comparison; other low bytes are rare
    found = data[at]
    other = (found != COMMA) & (found != NEWLINE)
    return (at[~other], found[~other]) if other.any() else (at, found)


def _integers(
    data: np.ndarray, words: np.ndarray, start: np.ndarray, stop: np.ndarray, out: np.ndarray
) -> bool:
    """The cells data[start:stop] as int64 into `out` (their order reshaped to its shape)
    when each is -?[0-9]{1,18}; False otherwise. start[0] is the first cell."""
    length = stop - start
    if length.min() < 1:
        return False
    safe = int(start[0]) >= 8  # every cell has 8 bytes before its end
    if length.max() <= 18 and _digits(words, stop, length, out, safe):
        return True  # no signs, the usual case
    minus = data[start] == MINUS  # signs, or not integers at all
    digits = length - minus
    if digits.min() < 1 or digits.max() > 18 or not _digits(words, stop, digits, out, safe):
        return False
    if minus.any():
        np.negative(out, out=out, where=minus.reshape(out.shape))
    return True


def _digits(
    words: np.ndarray, stop: np.ndarray, digits: np.ndarray, out: np.ndarray, safe: bool
) -> bool:
    """The cells of `digits` digits (1 to 18) each that end at `stop` into `out` (their
    order reshaped to its shape); False when a byte of theirs is not a digit."""
    value = _eight(words, stop, digits, safe, out.view(np.uint64))
    if value is None:
        return False
    for k in (1, 2):  # digits 9 to 16 and 17 to 18, for the cells that have them
        longer = digits > 8 * k
        count = int(np.count_nonzero(longer))
        if not count:
            break
        if count == len(digits):  # every cell (offsets of 9 digits and more, say)
            high = _eight(words, stop - 8 * k, digits - 8 * k, safe)
            if high is None:
                return False
            high *= np.uint64(10 ** (8 * k))
            value += high.reshape(value.shape)  # below 10^18 < 2^63
            continue
        more = np.flatnonzero(longer)
        high = _eight(words, stop[more] - 8 * k, digits[more] - 8 * k, safe)
        if high is None:
            return False
        high *= np.uint64(10 ** (8 * k))
        value[np.divmod(more, value.shape[1])] += high
    return True


def _eight(
    words: np.ndarray,
    stop: np.ndarray,
    count: np.ndarray,
    safe: bool,
    out: np.ndarray | None = None,
) -> np.ndarray | None:
    """The number written by the min(`count`, 8) bytes (count >= 1) before each `stop`, as
    uint64 (into `out` when given: uint64, shaped like `stop` or reshaped from it); None
    when one of those bytes is not a digit. `safe`: every stop is 8 or more."""
    at = stop - 8
    if safe or at.min() >= 0:  # the usual case
        x = words[at]
    else:  # near the start of the bytes: read from 0, then shift
        short = np.flatnonzero(at < 0)
        at[short] = 0
        x = words[at]
        x[short] <<= ((8 - stop[short]) * 8).astype(np.uint64)
    x &= _KEEP[count]  # the cell's bytes: the high ones
    x |= _FILL[count]  # bytes before the cell read as '0'
    digits = x - _ZEROS  # each byte its digit (when each is one: no borrows)
    # Every byte 0x30 to 0x39: no high bit in byte - '0' (none under '0') nor in byte +
    # 0x46 (none over '9', nor 0x80 and up). The lowest byte that is not a digit has no
    # carry or borrow from below it, so it shows; and digits make none.
    x += _OVER_NINE
    x |= digits
    if int(np.bitwise_or.reduce(x)) & _HIGH_BITS:
        return None
    x = digits  # the first digit in the lowest byte
    x *= np.uint64(10 * 2**8 + 1)  # pairs of digits
    x >>= np.uint64(8)
    x &= np.uint64(0x00FF00FF00FF00FF)
    x *= np.uint64(100 * 2**16 + 1)  # groups of four
    x >>= np.uint64(16)
    x &= np.uint64(0x0000FFFF0000FFFF)
    x *= np.uint64(10000 * 2**32 + 1)  # all eight
    if out is None:
        x >>= np.uint64(32)
        return x
    np.right_shift(x.reshape(out.shape), np.uint64(32), out=out)
    return out


def _rows(data: np.ndarray, start: np.ndarray, width: int) -> np.ndarray:
    """data[start[i] : start[i] + width] for each i (ascending), as rows; zeros past the
    end. `width` is a multiple of 8: each row is read as words."""
    out = np.zeros((len(start), width // 8), np.uint64)
    fit = int(np.searchsorted(start, len(data) - width, side="right"))
    words = _words(data)
    for k in range(width // 8):
        out[:fit, k] = words[start[:fit] + 8 * k]
    if fit < len(start):
        first = int(start[fit])
        tail = np.zeros(len(data) - first + width, np.uint8)
        tail[: len(data) - first] = data[first:]
        for k in range(width // 8):
            out[fit:, k] = _words(tail)[start[fit:] - first + 8 * k]
    return out.view(np.uint8)


def _words(data: np.ndarray) -> np.ndarray:
    """Every 8-byte window of the bytes, read as one little-endian word (a view, no copy)."""
    return np.ndarray((len(data) - 7,), "<u8", buffer=data, strides=(1,))
