"""Reading the `tensors` list of an `offload` case, v1 fields and the optional v2 ones
(start and end tier, writes, recompute, compress); README.md states the rules."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from judge.csvtable import INT_LIMIT
from judge.types.offload.jsonfile import key_problem, present, show_value

SIZE_LIMIT = 2**48  # 256 TiB: sums of a step's tensors stay far inside int64
_ID = re.compile(r"[A-Za-z0-9._:-]{1,100}")
_REQUIRED = ("id", "size", "alignment", "uses")
_OPTIONAL = ("writes", "start", "end", "recompute", "compress")
_REQUIRED_SET, _ALL_SET = frozenset(_REQUIRED), frozenset(_REQUIRED + _OPTIONAL)
DEVICE, HOST, NVME, NONE = 0, 1, 2, 3  # tiers: case.start / case.end codes
START_NAMES = {"device": DEVICE, "host": HOST, "nvme": NVME}
END_NAMES = {"none": NONE, "host": HOST, "device": DEVICE}


@dataclass
class TensorColumns:
    ids: list[str] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    aligns: list[int] = field(default_factory=list)
    starts: list[int] = field(default_factory=lambda: [0])
    uses: list[int] = field(default_factory=list)
    # v2: left empty when no tensor has the field (the case then keeps None)
    writes: list[bool] = field(default_factory=list)
    start: list[int] = field(default_factory=list)
    end: list[int] = field(default_factory=list)
    recompute_cost: list[int] = field(default_factory=list)
    sources: list[tuple[int, ...]] = field(default_factory=list)
    csize: list[int] = field(default_factory=list)
    encode: list[int] = field(default_factory=list)
    decode: list[int] = field(default_factory=list)
    uses_nvme: str = ""  # the first tensor that starts on nvme


def as_int(value: Any, what: str, low: int, fail: Any, high: int = INT_LIMIT) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        top = "2^48" if high == SIZE_LIMIT else "2^62"
        raise fail(f"{what} must be an integer from {low} to {top}, not {show_value(value)}")
    return value


def read_tensors(tensors: list[Any], n_steps: int, fail: Any) -> TensorColumns:
    cols = TensorColumns()
    index: dict[str, int] = {}
    extras: list[dict[str, Any]] = []
    for k, t in enumerate(tensors):
        where = f"tensors[{k}]"
        problem = "" if isinstance(t, dict) else "is not an object"
        if not problem:
            if None in t.values():  # null: absent
                t = present(t, _OPTIONAL)
            if not _REQUIRED_SET <= t.keys() <= _ALL_SET:  # the fast test; then which key
                problem = key_problem(t, _REQUIRED, _OPTIONAL)
        if problem:
            raise fail(
                f"{where} {problem} (a tensor has {', '.join(_REQUIRED)}; "
                f"optionally {', '.join(_OPTIONAL)})"
            )
        tid = t["id"]
        if not isinstance(tid, str) or not _ID.fullmatch(tid):
            raise fail(f"{where}: id must match [A-Za-z0-9._:-]{{1,100}}")
        if tid in index:
            raise fail(f"{where}: duplicate id {tid}")
        index[tid] = k
        cols.sizes.append(as_int(t["size"], f"{tid}.size", 1, fail, SIZE_LIMIT))
        cols.aligns.append(as_int(t["alignment"], f"{tid}.alignment", 1, fail))
        own = _steps(t["uses"], f"tensor {tid}: uses", n_steps, fail, nonempty=True)
        cols.ids.append(tid)
        cols.uses += own
        cols.starts.append(len(cols.uses))
        extras.append(t)
    if any(len(t) > len(_REQUIRED) for t in extras):  # some optional key (checked above)
        _read_v2(cols, extras, index, n_steps, fail)
    return cols


def _steps(raw: Any, what: str, n_steps: int, fail: Any, nonempty: bool) -> list[int]:
    if not isinstance(raw, list) or (nonempty and not raw):
        raise fail(f"{what} must be a {'non-empty ' if nonempty else ''}list of steps")
    own = [as_int(u, what, 0, fail) for u in raw]
    if any(b <= a for a, b in pairwise(own)) or (own and own[-1] >= n_steps):
        raise fail(f"{what} must be sorted, distinct steps in 0..{n_steps - 1}")
    return own


def _read_v2(
    cols: TensorColumns, raw: list[dict[str, Any]], index: dict[str, int], n_steps: int, fail: Any
) -> None:
    for i, t in enumerate(raw):
        tid, uses = cols.ids[i], cols.uses[cols.starts[i] : cols.starts[i + 1]]
        writes = _steps(t.get("writes", uses), f"tensor {tid}: writes", n_steps, fail, False)
        if set(writes) - set(uses):
            raise fail(f"tensor {tid}: writes must be some of its uses {uses}")
        cols.writes += [u in set(writes) for u in uses]
        start = _choice(t.get("start", "device"), START_NAMES, f"tensor {tid}: start", fail)
        cols.start.append(start)
        if start == NVME and not cols.uses_nvme:
            cols.uses_nvme = tid
        cols.end.append(_choice(t.get("end", "none"), END_NAMES, f"tensor {tid}: end", fail))
        _recompute(cols, t.get("recompute"), tid, start, writes, uses, index, fail)
        _compress(cols, t.get("compress"), tid, cols.sizes[i], fail)


def _choice(value: Any, names: dict[str, int], what: str, fail: Any) -> int:
    if not isinstance(value, str) or value not in names:
        raise fail(f"{what} must be one of {', '.join(names)}, not {show_value(value)}")
    return names[value]


def _recompute(
    cols: TensorColumns, raw: Any, tid: str, start: int, writes: list[int], uses: list[int],
    index: dict[str, int], fail: Any,
) -> None:  # fmt: skip
    if raw is None:
        cols.recompute_cost.append(-1)
        cols.sources.append(())
        return
    problem = key_problem(raw, ("cost", "from"), ()) if isinstance(raw, dict) else "is not one"
    if problem or not isinstance(raw["from"], list):
        raise fail(
            f'tensor {tid}: recompute must be {{"cost": µs, "from": [tensor ids]}}; '
            f"it {problem or 'has a from that is not a list'}"
        )
    cost = as_int(raw["cost"], f"tensor {tid}: recompute cost", 0, fail)
    # Recomputing gives the value the tensor was produced with: it must be produced on
    # the device and never written after that.
    if start != DEVICE or writes != uses[:1]:
        raise fail(
            f"tensor {tid} is recomputable, so it must start on the device and be written "
            f"only by its first use (writes [{uses[0]}])"
        )
    found = []
    for j in raw["from"]:
        if j == tid:  # its own value is what recomputing it must make
            raise fail(f"tensor {tid}: recompute from {tid}: a tensor is not rebuilt from itself")
        if not isinstance(j, str) or j not in index:
            raise fail(f"tensor {tid}: recompute from unknown tensor {show_value(j)}")
        found.append(index[j])
    if len(set(found)) != len(found):
        raise fail(f"tensor {tid}: recompute names a source twice")
    cols.recompute_cost.append(cost)
    cols.sources.append(tuple(found))


def _compress(cols: TensorColumns, raw: Any, tid: str, size: int, fail: Any) -> None:
    if raw is None:
        cols.csize.append(0)
        cols.encode.append(0)
        cols.decode.append(0)
        return
    keys = ("size", "encode", "decode")
    problem = key_problem(raw, keys, ()) if isinstance(raw, dict) else "is not one"
    if problem:
        raise fail(
            f'tensor {tid}: compress must be {{"size": bytes, "encode": µs, "decode": µs}}; '
            f"it {problem}"
        )
    small = raw["size"]
    if isinstance(small, bool) or not isinstance(small, int) or not 1 <= small <= size:
        raise fail(
            f"tensor {tid}: compressed size must be an integer from 1 to its size {size}, "
            f"not {show_value(small)}"
        )
    cols.csize.append(small)
    cols.encode.append(as_int(raw["encode"], f"tensor {tid}: encode", 0, fail))
    cols.decode.append(as_int(raw["decode"], f"tensor {tid}: decode", 0, fail))
