"""The `online` case: a stream of allocation requests and frees (README.md here).

Read strictly: the first broken rule is reported with its line. The parsed case
keeps columns (numpy) per allocation and the event order, so that a million
events cost arrays, not objects, and the `offset` form of the same trace is one
array view away (an allocation at event k lives in [k, its free's event)).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from judge.csvtable import INT_LIMIT, read_bounded
from judge.errors import CaseError, show_value
from judge.types.offset.case import IdRows

MAX_CASE_BYTES = 512 * 2**20
MAX_EVENTS = 4_000_000
MAX_HINTS = 16
MAX_VALUE_CHARS = 128
NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
ID = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
NUMBER = re.compile(r"[0-9]{1,19}")
VALUE = re.compile(rf"[!-~]{{1,{MAX_VALUE_CHARS}}}")

Event = tuple  # ("a", id, size, alignment, (values...)) or ("f", id)


@dataclass(frozen=True, eq=False)
class OnlineCase(IdRows):
    """Allocation i (in request order) is made at event lower[i] and freed at event
    upper[i] (the number of events when never freed); events count from 0."""

    hint_names: tuple[str, ...]
    ids: list[str]
    size: np.ndarray  # int64
    alignment: np.ndarray  # int64
    lower: np.ndarray  # int64: event index of the request
    upper: np.ndarray  # int64: event index of the free, or the number of events
    hints: list[tuple[str, ...]]
    freed: np.ndarray  # bool: upper is a free event (not the end)
    events: int  # how many a/f lines
    capacity: int
    path: str = ""

    def event_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Per event in order: the allocation row it concerns and whether it is a
        request (True) or a free (False)."""
        rows = np.empty(self.events, dtype=np.int64)
        is_alloc = np.zeros(self.events, dtype=bool)
        n = np.arange(len(self), dtype=np.int64)
        rows[self.lower] = n
        is_alloc[self.lower] = True
        rows[self.upper[self.freed]] = n[self.freed]
        return rows, is_alloc


def read_case(path: Path, capacity: int) -> OnlineCase:
    data = read_bounded(path, MAX_CASE_BYTES, CaseError)
    return parse_case_bytes(data, path, capacity)


def parse_case_bytes(data: bytes, path: Path | str, capacity: int) -> OnlineCase:
    if not 0 <= capacity <= INT_LIMIT:
        raise CaseError(f"capacity {show_value(capacity)} is outside [0, 2^62]", path)
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise CaseError("the case is not ASCII text", path, line) from None
    return _Reader(str(path)).read(text.split("\n"), capacity)


class _Reader:
    """One pass over the lines; the first fault raises CaseError with its line."""

    def __init__(self, path: str):
        self.path = path
        self.ids: list[str] = []
        self.size: list[int] = []
        self.align: list[int] = []
        self.lower: list[int] = []
        self.hints: list[tuple[str, ...]] = []
        self.free_of: dict[int, int] = {}  # row -> event index of its free
        self.row_of: dict[str, int] = {}
        self.events = 0

    def fail(self, message: str, line: int) -> CaseError:
        return CaseError(message, self.path, line)

    def read(self, lines: list[str], capacity: int) -> OnlineCase:
        names: tuple[str, ...] | None = None
        for number, raw in enumerate(lines, 1):
            line = raw[:-1] if raw.endswith("\r") else raw
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            words = line.split(" ")
            if names is None:
                names = self._hint_names(words, number)
            elif words[0] == "a":
                self._request(words, names, number)
            elif words[0] == "f":
                self._free(words, number)
            else:
                raise self.fail(
                    f"an event line starts with 'a' or 'f', not {show_value(words[0])}", number
                )
        if names is None:
            raise self.fail("the case has no 'hints' line", len(lines))
        return self._case(names, capacity)

    def _hint_names(self, words: list[str], line: int) -> tuple[str, ...]:
        if words[0] != "hints":
            raise self.fail("the first line must be 'hints' and the hint names", line)
        names = tuple(words[1:])
        self._all_match(
            names, NAME, "hint name {} is not [a-z][a-z0-9_]* of at most 32 characters "
            "(names are separated by one space)", line,
        )  # fmt: skip
        if len(names) > MAX_HINTS:
            raise self.fail(f"{len(names)} hint names; at most {MAX_HINTS}", line)
        if len(set(names)) != len(names):
            raise self.fail("a hint name repeats", line)
        return names

    def _all_match(self, words: Sequence[str], rule: re.Pattern, message: str, line: int) -> None:
        """The first word that breaks `rule` fails the case; `message` has {} for it."""
        for word in words:
            if not rule.fullmatch(word):
                raise self.fail(message.format(show_value(word)), line)

    def _event(self, line: int) -> int:
        if self.events >= MAX_EVENTS:
            raise self.fail(f"more than {MAX_EVENTS:,} events", line)
        self.events += 1
        return self.events - 1

    def _request(self, words: list[str], names: tuple[str, ...], line: int) -> None:
        if len(words) != 4 + len(names):
            raise self.fail(
                f"a request is 'a ID SIZE ALIGNMENT' and {len(names)} hint value(s) "
                f"separated by single spaces; this line has {len(words) - 1} field(s)",
                line,
            )
        bid = words[1]
        if not ID.fullmatch(bid):
            raise self.fail(f"id {show_value(bid)} is not 1 to 64 of A-Za-z0-9_.:-", line)
        if bid in self.row_of:
            raise self.fail(f"id {bid} was already allocated (ids are never reused)", line)
        size = self._number(words[2], "size", line)
        align = self._number(words[3], "alignment", line)
        values = tuple(words[4:])
        self._all_match(
            values, VALUE, f"hint value {{}} is not 1 to {MAX_VALUE_CHARS} printable "
            "characters without spaces ('-' when unknown)", line,
        )  # fmt: skip
        self.row_of[bid] = len(self.ids)
        self.ids.append(bid)
        self.size.append(size)
        self.align.append(align)
        self.lower.append(self._event(line))
        self.hints.append(values)

    def _number(self, word: str, what: str, line: int) -> int:
        value = int(word) if NUMBER.fullmatch(word) else 0
        if not 1 <= value <= INT_LIMIT:
            raise self.fail(f"{what} {show_value(word)} is not an integer in [1, 2^62]", line)
        return value

    def _free(self, words: list[str], line: int) -> None:
        if len(words) != 2:
            raise self.fail("a free is 'f ID'", line)
        row = self.row_of.get(words[1])
        if row is None:
            raise self.fail(f"free of {show_value(words[1])}, which was never allocated", line)
        if row in self.free_of:
            raise self.fail(f"{words[1]} is freed twice", line)
        self.free_of[row] = self._event(line)

    def _case(self, names: tuple[str, ...], capacity: int) -> OnlineCase:
        n = len(self.ids)
        upper = np.full(n, self.events, dtype=np.int64)
        freed = np.zeros(n, dtype=bool)
        if self.free_of:
            rows = np.fromiter(self.free_of.keys(), dtype=np.int64, count=len(self.free_of))
            upper[rows] = np.fromiter(self.free_of.values(), dtype=np.int64, count=len(rows))
            freed[rows] = True
        return OnlineCase(
            names,
            self.ids,
            np.array(self.size, dtype=np.int64),
            np.array(self.align, dtype=np.int64),
            np.array(self.lower, dtype=np.int64),
            upper,
            self.hints,
            freed,
            self.events,
            capacity,
            self.path,
        )


def format_events(hint_names: Sequence[str], events: Iterable[Event]) -> str:
    """A case file's text: `events` are ("a", id, size, alignment, values) and ("f", id).
    Writers (generators, importers) use this and then read the text back to check it."""
    out = ["hints" + "".join(f" {n}" for n in hint_names)]
    for event in events:
        if event[0] == "a":
            _, bid, size, align, values = event
            out.append(f"a {bid} {size} {align}" + "".join(f" {v}" for v in values))
        else:
            out.append(f"f {event[1]}")
    return "\n".join(out) + "\n"


def case_events(case: OnlineCase) -> Iterable[Event]:
    rows, is_alloc = case.event_rows()
    for row, alloc in zip(rows.tolist(), is_alloc.tolist(), strict=True):
        if alloc:
            size, align = int(case.size[row]), int(case.alignment[row])
            yield ("a", case.ids[row], size, align, case.hints[row])
        else:
            yield ("f", case.ids[row])
