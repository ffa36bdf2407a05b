"""The `offset` case: buffers with half-open lifespans, sizes and alignments."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from judge.csvscan import Ids
from judge.csvtable import INT_LIMIT, IdTable, parse_id_table, read_bounded
from judge.errors import CaseError, show_value

CASE_COLUMNS = ("id", "lower", "upper", "size")
CASE_OPTIONAL = ("alignment",)
MAX_CASE_BYTES = 512 * 2**20
_RANGES = {
    "lower": (0, INT_LIMIT),
    "upper": (0, INT_LIMIT),
    "size": (1, INT_LIMIT),
    "alignment": (1, INT_LIMIT),
}


class IdRows:
    """Rows named by `ids` (a case of any type whose rows are buffers). `ids` is a list,
    or, read from a file, a csvscan.Ids: list-like, its strings made only when asked for."""

    ids: Sequence[str]

    def __len__(self) -> int:
        return len(self.ids)

    def index(self) -> dict[str, int]:
        """Row of each id; built on demand (plans need it, lower bounds do not)."""
        return {bid: i for i, bid in enumerate(self.ids)}

    def joined_ids(self) -> str:
        """The ids joined by "," (as csvtable.IdTable.id_text)."""
        return self.ids.text() if isinstance(self.ids, Ids) else ",".join(self.ids)

    def id_chars(self) -> int:
        """How many characters the ids have, all together."""
        return self.ids.chars() if isinstance(self.ids, Ids) else sum(map(len, self.ids))


@dataclass(frozen=True, eq=False)
class OffsetCase(IdRows):
    """Buffer i lives in [lower[i], upper[i]) and needs size[i] bytes."""

    ids: Sequence[str]  # a list, or a csvscan.Ids (read from a file)
    lower: np.ndarray  # int64
    upper: np.ndarray  # int64
    size: np.ndarray  # int64
    alignment: np.ndarray  # int64, >= 1
    capacity: int
    path: str = ""


def read_case(path: Path, capacity: int) -> OffsetCase:
    data = read_bounded(path, MAX_CASE_BYTES, CaseError)
    return parse_case_bytes(data, path, capacity)


def parse_case_bytes(data: bytes, path: Path | str, capacity: int) -> OffsetCase:
    if not 0 <= capacity <= INT_LIMIT:
        raise CaseError(f"capacity {show_value(capacity)} is outside [0, 2^62]", path)
    table = parse_id_table(data, path, CASE_COLUMNS, CASE_OPTIONAL, _RANGES, CaseError, True)
    ids = _check_ids(table)
    lower, upper, size = (table.ints[k] for k in ("lower", "upper", "size"))
    alignment = table.ints.get("alignment")
    if alignment is None:
        alignment = np.ones(len(ids), dtype=np.int64)
    empty = np.flatnonzero(upper <= lower)
    if empty.size:
        i = int(empty[0])
        raise CaseError(
            f"buffer {ids[i]} has an empty lifespan [{lower[i]}, {upper[i]}): "
            "lower must be < upper",
            path,
            table.line_of(i),
        )
    return OffsetCase(ids, lower, upper, size, alignment, capacity, str(path))


def _check_ids(table: IdTable) -> Sequence[str]:
    if table.plainly_distinct:
        return table.id_column  # the common case, shown by numpy over the bytes
    ids = table.ids
    if len(set(ids)) == len(ids) and not any(b != b.strip() for b in ids):
        return ids  # still common (non-ASCII ids, say), checked at C speed
    seen: dict[str, int] = {}
    for i, bid in enumerate(ids):
        if bid != bid.strip():
            raise CaseError(f"id {bid!r} has spaces around it", table.path, i + 2)
        if bid in seen:
            raise CaseError(f"id {bid!r} repeats the id on line {seen[bid] + 2}", table.path, i + 2)
        seen[bid] = i
    return ids


def case_csv(case: OffsetCase) -> str:
    """The case as the canonical CSV planners read (alignment always present)."""
    rows = zip(
        case.ids,
        case.lower.tolist(),
        case.upper.tolist(),
        case.size.tolist(),
        case.alignment.tolist(),
        strict=True,
    )
    body = "".join(f"{b},{lo},{up},{s},{a}\n" for b, lo, up, s, a in rows)
    return "id,lower,upper,size,alignment\n" + body
