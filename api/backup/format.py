"""What a backup archive (api.backup) holds and how its values are written.

Each value keeps its exact type through JSON: integers stay integers whatever their
size (JSON has no limit, Python's json none either), text stays text, and what JSON
cannot say is tagged in a one-key object: bytes {"b": base64}, a timestamp {"t":
ISO 8601, with its offset when it has one}, a date {"d": ...}, a float JSON cannot
write {"f": "nan"}, a decimal {"n": "1.5"}, and a JSON column's own value {"j": ...}
(so that a dict stored in a column is never taken for a tag).
"""

from __future__ import annotations

import base64
import math
import os
import re
from collections.abc import Iterator, Sequence
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path, PurePosixPath
from typing import Any

FORMAT = "memorace-backup/1"
TABLES = "tables"
MANIFEST = "manifest.json"
# The data directory's entries a backup keeps (api.settings); every other one (the
# SQLite file, cache/, queue/, scratch, logs, the beat schedule) is made again.
KEPT = ("blobs", "plans", "artifacts", "problems", "secrets", "imports", "secret_key",
        "admin.token")  # fmt: skip
# Names a stored path's parts may have: no separators, no control characters (and
# neither "." nor "..", checked apart).
PART = re.compile(r"[^/\\\x00-\x1f\x7f]{1,255}")
TABLE_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def encode_value(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"f": repr(value)}
    if isinstance(value, bytes | bytearray | memoryview):
        return {"b": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, datetime):
        return {"t": value.isoformat()}
    if isinstance(value, date):
        return {"d": value.isoformat()}
    if isinstance(value, Decimal):
        return {"n": str(value)}
    if isinstance(value, dict | list):
        return {"j": value}
    raise TypeError(f"cannot back up a value of type {type(value).__name__}")


def encode_row(row: Sequence[Any]) -> list[Any]:
    return [encode_value(v) for v in row]


def decode_value(value: Any) -> Any:
    """The value `encode_value` wrote; ValueError for anything it never writes."""
    if value is None or isinstance(value, bool | int | str | float):
        return value
    if isinstance(value, dict) and len(value) == 1:
        [(tag, body)] = value.items()
        if tag == "j":
            return body
        if isinstance(body, str):
            decoders = {"b": lambda s: base64.b64decode(s, validate=True),
                        "t": datetime.fromisoformat, "d": date.fromisoformat,
                        "f": float, "n": Decimal}  # fmt: skip
            if tag in decoders:
                try:
                    return decoders[tag](body)
                except (ValueError, ArithmeticError) as exc:
                    raise ValueError(f"a damaged {tag!r} value: {exc}") from None
    raise ValueError(f"not a value a backup writes: {str(value)[:80]!r}")


def check_path(rel: str) -> PurePosixPath:
    """A kept file's path relative to the data directory, checked: it stays inside the
    data directory, under one of the kept entries (ValueError otherwise)."""
    path = PurePosixPath(rel)
    parts = path.parts
    if not parts or parts[0] not in KEPT or str(path) != rel:
        raise ValueError(f"not a path a backup keeps: {rel[:200]!r}")
    bad = [p for p in parts if p in (".", "..") or not PART.fullmatch(p)]
    if bad or len(rel) > 1000:
        raise ValueError(f"not a path a backup keeps: {rel[:200]!r}")
    return path


def kept_files(data_dir: Path) -> Iterator[tuple[str, Path]]:
    """(path relative to the data directory, path) of each file a backup keeps, sorted;
    symbolic links and half-written files (a blob's `.partial`, a generator's `.made-`
    folder) are left out."""
    for name in KEPT:
        top = data_dir / name
        if top.is_symlink():
            continue
        found = [top] if top.is_file() else _walk(top) if top.is_dir() else []
        for path in found:
            rel = path.relative_to(data_dir).as_posix()
            if path.is_symlink() or not path.is_file() or ".partial" in path.name:
                continue
            if any(part.startswith(".made-") for part in path.parts):
                continue
            try:
                check_path(rel)
            except ValueError:
                continue  # a name no service writes (an operator's stray file)
            yield rel, path


def _walk(top: Path) -> list[Path]:
    """Every entry under `top`, sorted. os.walk, not rglob: a folder that goes away while
    it is listed (an import's upload once its job ended, a generator's `.made-` folder
    renamed into place) is left out, where rglob raises FileNotFoundError."""
    found: list[Path] = []
    for folder, dirs, files in os.walk(top):  # no onerror: a folder gone is skipped
        found += [Path(folder, name) for name in dirs + files]
    return sorted(found)
