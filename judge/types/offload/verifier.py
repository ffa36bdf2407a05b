"""Exact verifier for `offload` plans: the static rules (judge.types.offload.rules), the
timing simulation (simulate) and the lower bound (bound), as README.md states them."""

from __future__ import annotations

from judge.types.base import Verification
from judge.types.offload.bound import exact_lower_bound, lower_bound
from judge.types.offload.case import OffloadCase
from judge.types.offload.layout import Layout, lay_out, point_name, residency_name
from judge.types.offload.plan import OffloadPlan
from judge.types.offload.rules import check, coverage
from judge.types.offload.simulate import ByteOwners, Timing, group_by_step, simulate
from judge.verdict import Verdict

__all__ = [
    "ByteOwners", "Layout", "Timing", "exact_lower_bound", "group_by_step", "lay_out",
    "lower_bound", "point_name", "residency_name", "simulate", "verify",
]  # fmt: skip


def verify(case: OffloadCase, plan: OffloadPlan) -> Verification:
    message = coverage(case, plan)
    if message:
        return Verification(Verdict.INVALID_PLAN, message)
    peak = _peak(case, plan)
    message, layout = check(case, plan)
    if message or layout is None:
        return Verification(Verdict.INVALID_PLAN, message, peak)
    timing = simulate(case, plan, layout)
    return Verification(Verdict.OK, timing.summary(case, plan), peak, timing.makespan_us)


def _peak(case: OffloadCase, plan: OffloadPlan) -> int:
    return int((plan.offset + case.size[plan.tensor]).max()) if len(plan) else 0
