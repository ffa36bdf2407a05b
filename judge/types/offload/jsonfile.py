"""Bounded JSON reading for offload cases and plans (hostile input).

`json.loads` alone lets two things escape that are not input errors: integers of
more than 4,300 digits (ValueError from int()) and deep nesting (RecursionError).
Here long numbers become `HugeNumber` values, which every field check refuses by
type with a readable message, and nesting past the interpreter's recursion limit
(about 1,000 levels; valid files need 4) is reported as such.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from judge.errors import InputError, show_value

__all__ = ["HugeNumber", "load_json", "show_value"]

MAX_DIGITS = 40  # far beyond 2^62 (19 digits); longer numbers are never valid


class HugeNumber:
    """A JSON number too long to be any valid value; shown by its length only."""

    def __init__(self, text: str):
        self.length = len(text)

    def __repr__(self) -> str:
        return f"<a {self.length}-character number>"

    __str__ = __repr__


def _int(text: str) -> int | HugeNumber:
    return int(text) if len(text) <= MAX_DIGITS else HugeNumber(text)


def _float(text: str) -> float | HugeNumber:
    return float(text) if len(text) <= MAX_DIGITS else HugeNumber(text)


def load_json(data: bytes, path: Path | str, error: type[InputError]) -> Any:
    """The JSON value in `data`; `error` (with a line where known) for anything else."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        detail = f"not UTF-8 text (byte {exc.start} is 0x{data[exc.start]:02x})"
        raise error(detail, path, line) from None
    try:
        return json.loads(text, parse_int=_int, parse_float=_float)
    except json.JSONDecodeError as exc:
        raise error(f"not valid JSON ({exc.msg})", path, exc.lineno) from None
    except RecursionError:
        raise error("JSON nested too deeply (valid files nest 4 levels)", path) from None
