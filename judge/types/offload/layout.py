"""Each residency's place in step time and its way in and out (README.md, "Plan").

Step time is counted in points: 2s is "during step s", 2s+1 is "after step s", -1 is
"before step 0". A residency holds all its bytes over [full_lower, upper); one copied
in compressed holds only its last `compressed size` bytes over [lower, full_lower).
How each residency comes in and leaves is judge.types.offload.ways'."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from judge.types.offload.case import DEVICE, OffloadCase
from judge.types.offload.plan import COPIED, NO_STEP, PRODUCED, RECOMPUTED, OffloadPlan
from judge.types.offload.ways import FINAL_OUT, RuleError, ways_in_and_out

__all__ = ["FINAL_OUT", "Layout", "RuleError", "lay_out", "point_name", "residency_name"]


@dataclass(frozen=True)
class Layout:
    first: np.ndarray  # first and last use step of each residency (plan order)
    last: np.ndarray
    lower: np.ndarray  # first point it holds bytes
    upper: np.ndarray  # first point after it (2 * last + 1, or 2T for tensors kept to the end)
    final: np.ndarray  # bool: the tensor's last residency
    full_lower: np.ndarray  # first point all its bytes are held (> lower only if compressed)
    at: np.ndarray  # the step its decode / recompute runs before (NO_STEP: none)
    out: np.ndarray  # how it leaves: OUT_* code, FINAL_OUT, or NO_OUT
    compressed_in: np.ndarray  # bool: its copy-in moves the compressed bytes
    from_nvme: np.ndarray  # bool: its copy-in reads NVMe (through the host)
    reads: np.ndarray  # the residency whose copy-out wrote what its copy-in reads; -1: none
    host_windows: np.ndarray  # int64 [k, 4]: host copies (first point, last point, bytes, tensor)
    memo: dict[str, Any] = field(default_factory=dict)  # what the checks found, for the timing


def point_name(point: int) -> str:
    if point < 0:
        return "before step 0"
    return f"during step {point // 2}" if point % 2 == 0 else f"after step {point // 2}"


def residency_name(case: OffloadCase, plan: OffloadPlan, r: int) -> str:
    return f"residency {int(plan.index[r]) + 1} of {case.ids[int(plan.tensor[r])]}"


def use_windows(case: OffloadCase, plan: OffloadPlan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(index of each residency's first use in case.uses, first use, last use)."""
    ends = np.cumsum(plan.count)
    before = ends - plan.count
    tensor_base = before[np.searchsorted(plan.tensor, plan.tensor, side="left")]
    first_idx = case.use_start[plan.tensor] + before - tensor_base
    return first_idx, case.uses[first_idx], case.uses[first_idx + plan.count - 1]


def lay_out(case: OffloadCase, plan: OffloadPlan) -> Layout:
    """The layout of a plan whose use counts add up (raises RuleError on a broken rule
    about ways in and out)."""
    first_idx, first, last = use_windows(case, plan)
    n = len(plan)
    final = np.append(plan.tensor[1:] != plan.tensor[:-1], True) if n else np.zeros(0, bool)
    mode = plan.mode if plan.mode is not None else np.where(plan.index == 0, PRODUCED, COPIED)
    at = plan.at if plan.at is not None else np.full(n, NO_STEP)
    kept = final & (case.end_tier()[plan.tensor] == DEVICE)
    upper = np.where(kept, 2 * len(case.steps), 2 * last + 1)
    ways = ways_in_and_out(case, plan, first_idx, first, last, final, mode, at)
    lower = np.where(
        mode == PRODUCED,
        2 * first,
        np.where(mode == RECOMPUTED, 2 * ways.at, 2 * plan.prefetch + 1),
    )
    return Layout(
        first, last, lower, upper, final,
        full_lower=np.where(ways.compressed_in, 2 * ways.at, lower),
        at=ways.at, out=ways.out, compressed_in=ways.compressed_in, from_nvme=ways.from_nvme,
        reads=ways.reads, host_windows=ways.host_windows,
    )  # fmt: skip
