"""The interface every problem type implements."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from judge.verdict import Verdict

CaseLike = Any  # each type has its own case class
PlanLike = Any  # and its own plan class


@dataclass(frozen=True)
class Verification:
    """What a verifier says about one parsed plan."""

    verdict: Verdict  # OK or INVALID_PLAN
    message: str  # empty when OK; otherwise the first violation, in words
    peak: int | None = None  # the plan's peak memory (bytes), when it has one
    makespan: float | None = None  # for timed types


class ProblemType(Protocol):
    """Parse a case, parse a plan, verify, lower bound, score."""

    name: str
    case_suffix: str  # file suffix of a case in a package, e.g. ".csv"
    bound_unit: str  # what lower_bound counts: "bytes" (then it must fit the capacity), "µs"
    plan_file: str  # the file a planner writes into its output directory

    def parse_case(self, path: Path, capacity: int | None) -> CaseLike:
        """Read and validate a case; raises CaseError naming file, line and rule.

        `capacity` is the package's; None (`memorace verify` without one) takes the
        case file's own where the format holds one, else the largest allowed, 2^62.
        The parsed case has a `capacity` attribute."""
        ...

    def parse_plan(self, path: Path, case: CaseLike) -> PlanLike:
        """Read a plan for `case`; raises PlanError (verdict BAD_OUTPUT)."""
        ...

    def verify(self, case: CaseLike, plan: PlanLike) -> Verification:
        """Check every rule; never raises on a parsed plan."""
        ...

    def lower_bound(self, case: CaseLike) -> int:
        """A provable bound on the best possible objective (computed once at import)."""
        ...

    def score(self, case: CaseLike, lower_bound: int, verification: Verification) -> float:
        """Case score in [0, 1] for an OK verification (1.0 = provably optimal)."""
        ...

    def write_planner_input(self, case: CaseLike, directory: Path, limits: dict[str, Any]) -> None:
        """Write the case as a planner reads it (planner contract, DESIGN.md)."""
        ...

    def picture(self, case: CaseLike, plan: PlanLike, lower_bound: int) -> str | None:
        """An SVG of the plan for contestants (None: this type draws none); raises
        NoPicture with the reason when this plan cannot be drawn."""
        ...
