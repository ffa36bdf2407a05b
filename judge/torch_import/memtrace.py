"""What `memorace trace` writes (tracer/TRACE_FORMAT.md, `memorace-torch-trace`
version 1), read without PyTorch for `memorace problem import-torch`: its tensor
storages as one case, named device "meta" (the recorder's stand-in for the accelerator).

The offset import keeps the trace's own times (aten-op indices): storage i lives in
[lower[i], upper[i]). The online import requests them in that order: at each op index
the storages that die there are freed before those born there are requested, so both
imports have the same lower bound. A buffer's id and hints say its category and the op
that made it (`activation.bmm.17`; `pre` for what existed before the step).
"""

from __future__ import annotations

import re
from typing import Any

from judge.csvtable import INT_LIMIT
from judge.errors import CaseError, show_value
from judge.torch_import.lifetimes import ALLOC, FREE, Buffers, Event
from judge.torch_import.recorded import Recording, hint_value

FORMAT = "memorace-torch-trace"
DEVICE = "meta"
HINTS = ("category", "op")
_COLUMNS = ("size", "lower", "upper", "op", "category")
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def is_memorace_trace(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("format") == FORMAT


def trace_buffers(doc: Any, path: str | Any) -> dict[str, Buffers]:
    """The offset import's buffers: one per storage, with the trace's own times."""
    out = Buffers()
    for i, (size, lower, upper, category, op) in enumerate(_storages(doc, path)):
        out.add(f"{_id_part(category)}.{_id_part(op)}.{i}", lower, upper, size)
    return {DEVICE: out}


def trace_recordings(doc: Any, path: str | Any) -> dict[str, Recording]:
    """The online import's requests: per op index, frees then allocs (a storage's
    index is its address, so each is its own request)."""
    storages = _storages(doc, path)
    order = [(upper, 0, i) for i, (_, _, upper, _, _) in enumerate(storages)]
    order += [(lower, 1, i) for i, (_, lower, _, _, _) in enumerate(storages)]
    order.sort()
    rec = Recording(HINTS)
    for _, is_alloc, i in order:
        size, _, _, category, op = storages[i]
        rec.events.append(Event(ALLOC if is_alloc else FREE, i, size))
        rec.hints.append((hint_value(category), hint_value(op)))
    return {DEVICE: rec}


def _id_part(name: str) -> str:
    return _ID_UNSAFE.sub("_", name[:64]) or "_"


Storage = tuple[int, int, int, str, str]  # size, lower, upper, category, op name


def _storages(doc: Any, path: str | Any) -> list[Storage]:
    """Every storage of a version-1 trace, checked: CaseError on anything else."""
    version = doc.get("version")
    if type(version) is not int or version != 1:  # true and 1.0 equal 1 in Python
        raise CaseError(f"a {FORMAT} of version {show_value(version)}; this reads 1", path)
    categories = _list(doc, "categories", path, str)
    op_names = _list(doc, "op_names", path, str)
    ops = _field(doc, "ops", dict, path)
    op_name = _list(ops, "name", path, int, "ops.")
    tensors = _field(doc, "tensors", dict, path)
    cols = [_list(tensors, key, path, int, "tensors.") for key in _COLUMNS]
    if len({len(c) for c in cols}) != 1:
        raise CaseError("tensors: size, lower, upper, op and category differ in length", path)
    out = []
    for i, (size, lower, upper, op, cat) in enumerate(zip(*cols, strict=True)):
        where = f"tensors[{i}]"
        if not 0 < size <= INT_LIMIT:
            raise CaseError(f"{where}: size {size} is not from 1 to 2^62", path)
        if not 0 <= lower < upper <= INT_LIMIT:
            raise CaseError(f"{where}: life [{lower}, {upper}) is not 0 <= lower < upper", path)
        if not 0 <= cat < len(categories):
            raise CaseError(f"{where}: category {cat} is not an index of categories", path)
        out.append((size, lower, upper, categories[cat], _op(op, op_name, op_names, where, path)))
    return out


def _op(op: int, op_name: list[int], op_names: list[str], where: str, path: Any) -> str:
    if op == -1:
        return "pre"
    if not 0 <= op < len(op_name) or not 0 <= op_name[op] < len(op_names):
        raise CaseError(f"{where}: op {op} is not -1 or an op of the trace", path)
    return op_names[op_name[op]]


def _field(doc: dict[str, Any], key: str, kind: type, path: Any, at: str = "") -> Any:
    value = doc.get(key)
    if not isinstance(value, kind):
        what = "an object" if kind is dict else "a list"
        raise CaseError(f"{at}{key} must be {what}, got {show_value(value)}", path)
    return value


def _list(doc: dict[str, Any], key: str, path: Any, item: type, at: str = "") -> list[Any]:
    values = _field(doc, key, list, path, at)
    for i, v in enumerate(values):
        if not isinstance(v, item) or isinstance(v, bool):
            kind = "an integer" if item is int else "a string"
            raise CaseError(f"{at}{key}[{i}] must be {kind}, got {show_value(v)}", path)
    return values
