"""The fast path of judge.csvtable: well-formed `id,int,...` rows read by numpy alone.

A million-row table must read in a fraction of a second, so no Python object is made per
cell: the separators are found in one pass over the bytes, each integer cell is read
eight digits at a time (the digits of a cell as one 64-bit word, combined by three
multiplications: the SWAR method of simdjson and fast_float), and the ids come out as one
string, split once. Anything not plainly well formed (a cell with more than 18 digits, an
empty line, a stray character) gives None: csvtable then reads the table row by row and
names the first fault, so the messages do not depend on this module.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

COMMA, NEWLINE, MINUS = 0x2C, 0x0A, 0x2D
_ZEROS = np.uint64(0x3030303030303030)  # eight '0' characters
_HIGH = np.uint64(0xF0F0F0F0F0F0F0F0)
_SIX = np.uint64(0x0606060606060606)
_THREES = np.uint64(0x3333333333333333)
# Bytes an id may not start or end with for the quick check: ASCII whitespace as
# str.strip() sees it, and every non-ASCII byte (a multi-byte character may be a space).
_EDGE = np.zeros(256, bool)
_EDGE[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True
_EDGE[128:] = True
# For a cell of c digits (1 to 8) read as the high c bytes of a word: the bytes to keep,
# and '0' characters for the bytes below them (read as leading zeros).
_KEEP = np.array([0] + [2**64 - 2 ** (8 * (8 - c)) for c in range(1, 9)], np.uint64)
_FILL = _ZEROS & ~_KEEP
_MIX = np.uint64(0x9E3779B97F4A7C15)  # odd: multiplying by it loses no bits
_KEY_BYTES = 64  # longer ids get no keys (the caller's exact check takes over)


_ROWS = 1 << 15  # rows per block: small arrays stay in cache and their memory is reused
_BLOCK = 1 << 20  # bytes per block of the scan


@dataclass(frozen=True, eq=False)
class IdSpans:
    """Where the ids lie in the bytes: id i is data[start[i]:stop[i]], never empty."""

    data: np.ndarray  # uint8
    start: np.ndarray  # int64, ascending
    stop: np.ndarray  # int64

    def joined(self) -> str:
        """The ids joined by ","."""
        return ",".join(self._joined(r, r + _ROWS) for r in range(0, len(self.start), _ROWS))

    def _joined(self, first: int, last: int) -> str:
        start, stop = self.start[first:last], self.stop[first:last]
        length = stop - start + 1  # each with the comma after it
        total, width = int(length.sum()), -(-int(length.max()) // 8) * 8
        if len(length) * width <= 4 * total:  # ids of like lengths: one row of bytes each
            rows = _rows(self.data, start, width)
            chosen = rows[np.arange(width) < length[:, None]]
        else:  # a few long ids among short ones: byte by byte
            before = np.cumsum(length) - length
            chosen = self.data[np.arange(total) + np.repeat(start - before, length)]
        return chosen.tobytes()[:-1].decode()

    def plainly_distinct(self) -> bool:
        """True when the ids are certainly distinct and none could have spaces around it;
        False leaves it to an exact check (a space, a non-ASCII edge, long ids, or two ids
        with one key)."""
        if _EDGE[self.data[self.start]].any() or _EDGE[self.data[self.stop - 1]].any():
            return False
        width = -(-int((self.stop - self.start).max()) // 8) * 8
        if width > _KEY_BYTES:
            return False
        keys = np.empty(len(self.start), np.uint64)
        for r in range(0, len(keys), _ROWS):
            keys[r : r + _ROWS] = self._keys(r, r + _ROWS, width)
        keys.sort()
        return not (keys[1:] == keys[:-1]).any()

    def _keys(self, first: int, last: int, width: int) -> np.ndarray:
        """A 64-bit key per id, equal for equal ids (bytes past an id read as 0)."""
        start, stop = self.start[first:last], self.stop[first:last]
        words = _rows(self.data, start, width).view("<u8")  # (ids, width / 8)
        length = stop - start
        key = np.zeros(len(start), np.uint64)
        for k in range(words.shape[1]):
            key *= _MIX
            part = words[:, k]
            part &= ~_KEEP[8 - np.clip(length - 8 * k, 0, 8)]  # bytes past the id read as 0
            key ^= part
        return key


@dataclass(frozen=True, eq=False)
class Scan:
    spans: IdSpans
    values: np.ndarray  # (columns, rows) int64


def scan(data: bytes, begin: int, end: int, width: int) -> Scan | None:
    """Rows `id,int,...,int` in data[begin:end] (`width` ints of -?[0-9]{1,18}, ids of
    anything but a comma or a line end, rows joined by LF, no LF after the last) when the
    bytes are exactly that; None when they are not, or when they are under 8 bytes."""
    if end - begin < 8:
        return None
    rows = data.count(b"\n", begin, end) + 1
    found = Scan(IdSpans(np.frombuffer(data, np.uint8), *np.empty((2, rows), np.int64)),
                 np.empty((width, rows), np.int64))  # fmt: skip
    words = _words(found.spans.data)
    row, at = 0, begin
    while at <= end:  # blocks of whole lines
        stop = data.find(b"\n", min(at + _BLOCK, end), end)
        stop = end if stop < 0 else stop
        done = _block(found, words, row, at, stop)
        if done is None:
            return None
        row, at = row + done, stop + 1
    return found if row == rows else None


def _block(found: Scan, words: np.ndarray, row: int, at: int, stop: int) -> int | None:
    """Scan the whole lines in data[at:stop] into `found` from `row` on: how many."""
    data, width = found.spans.data, len(found.values)
    cuts = _separators(data[at:stop]) + at
    rows, extra = divmod(len(cuts) + 1, width + 1)
    if extra:
        return None
    grid = np.empty(rows * (width + 1), np.int64)
    grid[:-1], grid[-1] = cuts, stop
    grid = grid.reshape(rows, width + 1)  # each row: its commas, then its line end
    if not (data[grid[:, :width]] == COMMA).all() or not (data[grid[:-1, width]] == NEWLINE).all():
        return None
    line = found.spans.start[row : row + rows]
    line[0], line[1:] = at, grid[:-1, width] + 1
    found.spans.stop[row : row + rows] = grid[:, 0]
    if (grid[:, 0] <= line).any():  # an empty id
        return None
    for k in range(width):
        value = _integers(data, words, grid[:, k] + 1, grid[:, k + 1])
        if value is None:
            return None
        found.values[k, row : row + rows] = value
    return rows


def _separators(data: np.ndarray) -> np.ndarray:
    """Positions of every comma and line end, ascending."""
    at = np.flatnonzero(data <= COMMA)  # one comparison; other low bytes are rare
    found = data[at]
    other = (found != COMMA) & (found != NEWLINE)
    return at[~other] if other.any() else at


def _integers(
    data: np.ndarray, words: np.ndarray, start: np.ndarray, stop: np.ndarray
) -> np.ndarray | None:
    """The cells data[start:stop] as int64 when each is -?[0-9]{1,18}; None otherwise."""
    length = stop - start
    if length.min() < 1:
        return None
    minus = data[start] == MINUS
    digits = length - minus
    if digits.min() < 1 or digits.max() > 18:
        return None
    value = _eight(words, stop, np.minimum(digits, 8))
    for k in (1, 2):  # digits 9 to 16 and 17 to 18, for the cells that have them
        more = np.flatnonzero(digits > 8 * k)
        if value is None or not more.size:
            break
        high = _eight(words, stop[more] - 8 * k, np.minimum(digits[more] - 8 * k, 8))
        if high is None:
            return None
        high *= np.uint64(10 ** (8 * k))
        value[more] += high
    if value is None:
        return None
    value = value.view(np.int64)  # below 10^18 < 2^63
    if minus.any():
        np.negative(value, out=value, where=minus)
    return value


def _eight(words: np.ndarray, stop: np.ndarray, count: np.ndarray) -> np.ndarray | None:
    """The number written by the `count` (1 to 8) bytes before each `stop`, as uint64; None
    when one of those bytes is not a digit."""
    at = stop - 8
    if at[0] >= 0:  # `stop` ascends: the usual case
        x = words[at]
    else:  # near the start of the bytes: read from 0, then shift
        short = np.flatnonzero(at < 0)
        at[short] = 0
        x = words[at]
        x[short] <<= ((8 - stop[short]) * 8).astype(np.uint64)
    x &= _KEEP[count]  # the cell's bytes: the high ones
    x |= _FILL[count]  # bytes before the cell read as '0'
    # Every byte 0x30 to 0x39: its high nibble is 3, and still 3 after adding 6.
    check = x + _SIX
    check &= _HIGH
    check >>= np.uint64(4)
    check |= x & _HIGH
    if not (check == _THREES).all():
        return None
    x &= np.uint64(0x0F0F0F0F0F0F0F0F)  # digits, the first in the lowest byte
    x *= np.uint64(10 * 2**8 + 1)  # pairs of digits
    x >>= np.uint64(8)
    x &= np.uint64(0x00FF00FF00FF00FF)
    x *= np.uint64(100 * 2**16 + 1)  # groups of four
    x >>= np.uint64(16)
    x &= np.uint64(0x0000FFFF0000FFFF)
    x *= np.uint64(10000 * 2**32 + 1)  # all eight
    x >>= np.uint64(32)
    return x


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
