"""Bounded JSON reading for offload cases and plans (hostile input).

`json.loads` alone lets two things escape that are not input errors: integers of
more than 4,300 digits (ValueError from int()) and nesting past the interpreter's
recursion limit (RecursionError; about 1,000 levels, where valid files need 4).
Both become the reader's input error here. Integers that do parse may be of any
length below that: every field check bounds them, and messages show them with
`show_value`, which is safe for any length.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

from judge.errors import InputError, show_value

__all__ = ["key_problem", "load_json", "present", "show_value"]


def load_json(data: bytes, path: Path | str, error: type[InputError]) -> Any:
    """The JSON value in `data`; `error` (with a line where known) for anything else."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        detail = f"not UTF-8 text (byte {exc.start} is 0x{data[exc.start]:02x})"
        raise error(detail, path, line) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"not valid JSON ({exc.msg})", path, exc.lineno) from None
    except ValueError:  # int() of a number over 4,300 digits
        raise error("not valid JSON here: a number has more than 4,300 digits", path) from None
    except RecursionError:
        raise error("JSON nested too deeply (valid files nest 4 levels)", path) from None


def present(raw: dict[str, Any], optional: Collection[str]) -> dict[str, Any]:
    """raw without its optional keys whose value is null: null means absent (README.md,
    "Reading"). A required key stays, so that its null is refused as a wrong value."""
    if None not in raw.values():  # the usual case, checked in C
        return raw
    return {k: v for k, v in raw.items() if v is not None or k not in optional}


def key_problem(raw: dict[str, Any], required: Collection[str], optional: Collection[str]) -> str:
    """ "" when raw has every required key and no other than the optional ones; else what
    is wrong, naming the first unknown (sorted) or missing key."""
    unknown = sorted(k for k in raw if k not in required and k not in optional)
    if unknown:
        return f"has an unknown key {show_value(unknown[0])}"
    missing = [k for k in required if k not in raw]
    return f"has no {missing[0]}" if missing else ""
