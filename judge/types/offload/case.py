"""`offload` cases: steps with compute durations, tensors with their uses (JSON).

v2 fields are optional; a case without them means what a v1 case meant (README.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from judge.csvtable import INT_LIMIT, read_bounded
from judge.errors import CaseError
from judge.types.offload.case_tensors import (
    DEVICE,
    END_NAMES,
    HOST,
    NONE,
    NVME,
    SIZE_LIMIT,
    START_NAMES,
    TensorColumns,
    as_int,
    read_tensors,
)  # fmt: skip
from judge.types.offload.jsonfile import key_problem, load_json, present

CASE_BYTE_LIMIT = 512 * 2**20
CASE_KEYS = ("capacity", "h2d_bandwidth", "d2h_bandwidth", "steps", "tensors")
CASE_OPTIONAL = ("h2d_latency", "d2h_latency", "host_capacity", "nvme")
# sets of the same: the strong planner's judged.py (reference_solutions) imports them
_KEYS, _OPTIONAL = frozenset(CASE_KEYS), frozenset(CASE_OPTIONAL)
_NVME_KEYS = ("read_bandwidth", "write_bandwidth", "read_latency", "write_latency")


@dataclass(frozen=True)
class Nvme:
    read_bw: int  # NVMe -> host bytes per µs
    write_bw: int  # host -> NVMe
    read_latency: int  # µs per copy
    write_latency: int


@dataclass(frozen=True)
class OffloadCase:
    capacity: int
    h2d: int  # bytes per µs
    d2h: int
    steps: np.ndarray  # int64 [T], µs
    ids: list[str]
    size: np.ndarray  # int64 [n]
    alignment: np.ndarray  # int64 [n]
    use_start: np.ndarray  # int64 [n+1]: tensor i's uses are uses[use_start[i]:use_start[i+1]]
    uses: np.ndarray  # int64, sorted within each tensor
    # --- v2 (defaults are the v1 meaning) ---
    writes: np.ndarray | None = None  # bool per use; None: every use writes
    start: np.ndarray | None = None  # int8 [n] DEVICE/HOST/NVME; None: all DEVICE
    end: np.ndarray | None = None  # int8 [n] NONE/HOST/DEVICE; None: all NONE
    recompute_cost: np.ndarray | None = None  # int64 [n], -1: not recomputable
    sources: tuple[tuple[int, ...], ...] = ()  # per tensor: what it is recomputed from
    csize: np.ndarray | None = None  # int64 [n] compressed size, 0: not compressible
    encode: np.ndarray | None = None  # int64 [n] µs
    decode: np.ndarray | None = None
    h2d_latency: int = 0  # µs per copy
    d2h_latency: int = 0
    host_capacity: int | None = None  # pinned host bytes; None: unlimited
    nvme: Nvme | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def uses_of(self, i: int) -> np.ndarray:
        return self.uses[self.use_start[i] : self.use_start[i + 1]]

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "capacity": self.capacity,
            "h2d_bandwidth": self.h2d,
            "d2h_bandwidth": self.d2h,
            "steps": self.steps.tolist(),
        }
        for key, value, default in (
            ("h2d_latency", self.h2d_latency, 0),
            ("d2h_latency", self.d2h_latency, 0),
            ("host_capacity", self.host_capacity, None),
        ):
            if value != default:
                out[key] = value
        if self.nvme:
            n = self.nvme
            out["nvme"] = dict(
                zip(
                    _NVME_KEYS,
                    (n.read_bw, n.write_bw, n.read_latency, n.write_latency),
                    strict=True,
                )
            )
        out["tensors"] = [self._tensor_json(i) for i in range(len(self))]
        return out

    def _tensor_json(self, i: int) -> dict[str, Any]:
        uses = self.uses_of(i).tolist()
        t: dict[str, Any] = {
            "id": self.ids[i],
            "size": int(self.size[i]),
            "alignment": int(self.alignment[i]),
            "uses": uses,
        }
        lo, hi = int(self.use_start[i]), int(self.use_start[i + 1])
        if self.writes is not None and not self.writes[lo:hi].all():
            t["writes"] = [u for u, w in zip(uses, self.writes[lo:hi].tolist(), strict=True) if w]
        if self.start is not None and self.start[i] != DEVICE:
            t["start"] = _name(START_NAMES, int(self.start[i]))
        if self.end is not None and self.end[i] != NONE:
            t["end"] = _name(END_NAMES, int(self.end[i]))
        if self.recompute_cost is not None and self.recompute_cost[i] >= 0:
            t["recompute"] = {
                "cost": int(self.recompute_cost[i]),
                "from": [self.ids[j] for j in self.sources[i]],
            }
        if self.csize is not None and self.csize[i] > 0:
            t["compress"] = {
                "size": int(self.csize[i]),
                "encode": int(self.encode[i]),  # type: ignore[index]
                "decode": int(self.decode[i]),  # type: ignore[index]
            }
        return t

    # --- v2 accessors with the v1 defaults -----------------------------------------------------
    def writes_mask(self) -> np.ndarray:
        return np.ones(len(self.uses), bool) if self.writes is None else self.writes

    def start_tier(self) -> np.ndarray:
        return np.zeros(len(self), np.int8) if self.start is None else self.start

    def end_tier(self) -> np.ndarray:
        return np.full(len(self), NONE, np.int8) if self.end is None else self.end


def _name(names: dict[str, int], code: int) -> str:
    return next(k for k, v in names.items() if v == code)


def read_case(path: Path, capacity: int | None) -> OffloadCase:
    return parse_case_bytes(read_bounded(path, CASE_BYTE_LIMIT, CaseError), path, capacity)


def parse_case_bytes(data: bytes, path: Path | str, capacity: int | None) -> OffloadCase:
    return parse_case(load_json(data, path, CaseError), path, capacity)


def parse_case(raw: Any, path: Path | str, capacity: int | None) -> OffloadCase:
    def fail(message: str) -> CaseError:
        return CaseError(message, path)

    if not isinstance(raw, dict):
        raise fail("a case is one JSON object")
    raw = present(raw, CASE_OPTIONAL)
    problem = key_problem(raw, CASE_KEYS, CASE_OPTIONAL)
    if problem:
        raise fail(
            f"the case {problem} (it has {', '.join(CASE_KEYS)}; "
            f"optionally {', '.join(CASE_OPTIONAL)})"
        )
    cap = as_int(raw["capacity"], "capacity", 0, fail)
    if capacity is not None and cap != capacity:
        raise fail(f"capacity {cap} differs from the package's capacity {capacity}")
    h2d = as_int(raw["h2d_bandwidth"], "h2d_bandwidth", 1, fail)
    d2h = as_int(raw["d2h_bandwidth"], "d2h_bandwidth", 1, fail)
    if not isinstance(raw["steps"], list):
        raise fail("steps must be a list of durations in µs")
    steps = [as_int(d, f"steps[{s}]", 0, fail) for s, d in enumerate(raw["steps"])]
    if sum(steps) > INT_LIMIT:
        raise fail(f"the steps last {sum(steps)} µs in all; at most 2^62 allowed")
    tensors = raw["tensors"]
    if not isinstance(tensors, list):
        raise fail("tensors must be a list")
    cols = read_tensors(tensors, len(steps), fail)
    host_cap = raw.get("host_capacity")
    case = OffloadCase(
        cap, h2d, d2h, np.array(steps, dtype=np.int64), cols.ids,
        np.array(cols.sizes, dtype=np.int64), np.array(cols.aligns, dtype=np.int64),
        np.array(cols.starts, dtype=np.int64), np.array(cols.uses, dtype=np.int64),
        **_v2_columns(cols),
        h2d_latency=as_int(raw.get("h2d_latency", 0), "h2d_latency", 0, fail),
        d2h_latency=as_int(raw.get("d2h_latency", 0), "d2h_latency", 0, fail),
        host_capacity=None if host_cap is None else as_int(host_cap, "host_capacity", 0, fail),
        nvme=_nvme(raw.get("nvme"), fail),
    )  # fmt: skip
    if case.nvme is None and cols.uses_nvme:
        raise fail(f"tensor {cols.uses_nvme} starts on nvme, but the case has no nvme tier")
    _check_feasible(case, fail)
    _check_scorable(case, fail)
    return case


def _v2_columns(cols: TensorColumns) -> dict[str, Any]:
    def arr(values: list[int], dtype: Any) -> np.ndarray | None:
        return np.array(values, dtype=dtype) if values else None

    return {
        "writes": arr(cols.writes, bool),
        "start": arr(cols.start, np.int8),
        "end": arr(cols.end, np.int8),
        "recompute_cost": arr(cols.recompute_cost, np.int64),
        "sources": tuple(cols.sources),
        "csize": arr(cols.csize, np.int64),
        "encode": arr(cols.encode, np.int64),
        "decode": arr(cols.decode, np.int64),
    }


def _nvme(raw: Any, fail: Any) -> Nvme | None:
    if raw is None:
        return None
    problem = "is not an object"
    if isinstance(raw, dict):
        raw = present(raw, _NVME_KEYS[2:])
        problem = key_problem(raw, _NVME_KEYS[:2], _NVME_KEYS[2:])
    if problem:
        raise fail(
            f"nvme {problem}: it has {', '.join(_NVME_KEYS[:2])} (and optionally the latencies)"
        )
    bw = [as_int(raw[k], f"nvme.{k}", 1, fail) for k in _NVME_KEYS[:2]]
    lat = [as_int(raw.get(k, 0), f"nvme.{k}", 0, fail) for k in _NVME_KEYS[2:]]
    return Nvme(*bw, *lat)


def _check_scorable(case: OffloadCase, fail: Any) -> None:
    """Scores are lower bound / makespan: a case whose bound is under 1 µs would score
    every plan 0 (or divide by zero), so it is refused."""
    from judge.types.offload.bound import lower_bound

    if lower_bound(case) < 1:
        raise fail(
            "the steps last 0 µs in all: at least one step must take time "
            "(or a transfer be forced), or every plan would score 0"
        )


def _check_feasible(case: OffloadCase, fail: Any) -> None:
    """Every step's own tensors must fit together, or no plan exists."""
    if not len(case):
        return
    per_use = np.repeat(case.size, np.diff(case.use_start))
    if int(case.size.max()) * len(per_use) >= 2**63:  # int64 sums could wrap: exact ints
        per_use = per_use.astype(object)
    order = np.argsort(case.uses, kind="stable")
    steps, first = np.unique(case.uses[order], return_index=True)
    need = np.add.reduceat(per_use[order], first)
    kept = _kept_to_the_end(case, steps)
    need = need + kept
    k = int(np.argmax(need))
    worst, exact = int(steps[k]), int(need[k])
    if exact > case.capacity:
        raise fail(
            f"infeasible: step {worst} uses tensors of {exact} bytes in all, "
            f"more than the capacity {case.capacity}"
            + (" (with the tensors that must end on the device)" if kept[k] else "")
        )
    _check_host_room(case, fail)


def _kept_to_the_end(case: OffloadCase, steps: np.ndarray) -> np.ndarray:
    """Bytes of tensors that end on the device and were last used before each step: their
    last residency holds them from then on."""
    if case.end is None:
        return np.zeros(len(steps), dtype=np.int64)
    last = case.uses[case.use_start[1:] - 1]
    kept = case.end == DEVICE
    at = np.searchsorted(steps, last[kept], side="right")  # first listed step after it
    add = np.zeros(len(steps) + 1, dtype=object)
    np.add.at(add, at, case.size[kept].astype(object))
    return np.cumsum(add)[:-1]


def _check_host_room(case: OffloadCase, fail: Any) -> None:
    """Tensors that start on the host are all there before step 0, and those that end
    there are all there after the last step: each set must fit the host capacity."""
    if case.host_capacity is None:
        return
    for tier, label, when in (
        (case.start_tier(), "start", "before step 0"),
        (case.end_tier(), "end", "after the last step"),
    ):
        total = sum(case.size[tier == HOST].tolist())
        if total > case.host_capacity:
            raise fail(
                f"infeasible: the tensors that {label} on the host hold {total} bytes "
                f"{when}, more than the host capacity {case.host_capacity}"
            )


__all__ = ["DEVICE", "HOST", "NONE", "NVME", "SIZE_LIMIT", "OffloadCase", "parse_case", "read_case"]
