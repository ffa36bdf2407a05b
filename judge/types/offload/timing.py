"""The timing of an `offload` plan as the simulator (judge.types.offload.simulate) finds
it, and why steps waited, in the contestant's terms."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from judge.types.offload.case import OffloadCase
from judge.types.offload.layout import residency_name
from judge.types.offload.plan import OffloadPlan

Interval = tuple[str, int, int, int]  # (what, residency, start, end)
Cause = tuple[str, int, int]  # (what, residency, the one it waits for): worded only if shown
_SAY = {
    "bytes": "{t} waits for the bytes of {q}",
    "in": "waiting for the copy-in of {r}",
    "recompute bytes": "the recompute of {r} waits for the bytes of {q}",
    "recompute source": "the recompute of {r} waits for the copy-in of {q}",
    "decode bytes": "the decode of {r} waits for the bytes of {q}",
    "decode in": "the decode of {r} waits for its copy-in",
}


def say(case: OffloadCase, plan: OffloadPlan, cause: Cause | None) -> str:
    if cause is None:
        return ""
    what, r, q = cause
    return _SAY[what].format(
        t=case.ids[int(plan.tensor[r])],
        r=residency_name(case, plan, r),
        q=residency_name(case, plan, q) if q >= 0 else "",
    )


@dataclass
class Timing:
    """Times in units of 1/unit µs."""

    unit: int
    step_start: list[int]
    step_end: list[int]
    stall_cause: list[str]  # why each step waited, when given in words; else see cause()
    stall: list[int] = field(default_factory=list)  # waiting before each step, in units
    end: int = 0  # when the last step or copy ends
    causes: list[Cause | None] = field(default_factory=list, repr=False)
    named: tuple[OffloadCase, OffloadPlan] | None = field(default=None, repr=False)
    # makes (copies, work) when first asked: a verdict needs neither
    make_lists: Callable[[], tuple[list[Interval], list[Interval]]] | None = field(
        default=None, repr=False
    )
    _made: tuple[list[Interval], list[Interval]] | None = field(
        default=None, init=False, repr=False
    )

    @property
    def copies(self) -> list[Interval]:
        """(engine "d2h" | "h2d" | "nvme_read" | "nvme_write", residency, start, end)."""
        return self._lists()[0]

    @property
    def work(self) -> list[Interval]:
        """(kind "encode" | "decode" | "recompute", residency, start, end) on the compute
        stream."""
        return self._lists()[1]

    def _lists(self) -> tuple[list[Interval], list[Interval]]:
        if self._made is None:
            self._made = self.make_lists() if self.make_lists else ([], [])
            self.make_lists = None  # what made them can go
        return self._made

    def cause(self, s: int) -> str:
        """Why step s (or the work just before it) waited, in words ("" if it did not)."""
        if self.stall_cause:
            return self.stall_cause[s]
        if not self.named or not self.stall[s]:
            return ""
        return say(*self.named, self.causes[s])

    @property
    def makespan(self) -> int:
        return self.end

    @property
    def makespan_us(self) -> float:
        return self.makespan / self.unit

    def summary(self, case: OffloadCase, plan: OffloadPlan) -> str:
        """Where the time went, for a contestant who wants to know what cost points."""
        total = sum(self.stall)
        span = f"makespan {self.makespan_us:.3f} µs"
        tail = self.end - (self.step_end[-1] if self.step_end else 0)
        after = (
            f"; the last copy ends {tail / self.unit:.3f} µs after the last step" if tail else ""
        )
        if not total:
            return f"{span}, no stall: no step or work on the compute stream waited{after}"
        worst, s = max((d, s) for s, d in enumerate(self.stall))
        return (
            f"{span}, of which {total / self.unit:.3f} µs stalled; the longest stall, "
            f"{worst / self.unit:.3f} µs before step {s}: {self.cause(s)}{after}"
        )
