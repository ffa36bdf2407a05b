"""Case results and their aggregation into public and hidden problem scores."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from judge.verdict import Verdict


@dataclass(frozen=True)
class CaseResult:
    case: str
    split: str
    weight: float
    verdict: Verdict
    message: str
    lower_bound: int
    peak: int | None = None
    score: float = 0.0
    time_s: float | None = None
    plan_digest: str | None = None  # sha256 of the plan file, for rescoring and audit
    log: str = ""  # planner's stdout/stderr tail; shown for public cases only
    makespan_us: float | None = None  # timed problem types (offload): the simulated makespan
    request_us_mean: float | None = None  # interactive types (online): time per request, µs
    request_us_p99: float | None = None

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["verdict"] = str(self.verdict)
        return data


def problem_score(results: Iterable[CaseResult], split: str) -> float | None:
    """Weighted mean of case scores in `split`, times 100; None when it has no cases.

    Non-OK cases score 0. Terms are summed in case-name order with fsum so the
    same results always give the same score, whatever order they arrived in.
    A split whose weights add up to 0 (the service refuses to make one, but older
    data may hold one) is scored as if every case weighed 1: never a division by 0.
    """
    chosen = sorted((r for r in results if r.split == split), key=lambda r: r.case)
    if not chosen:
        return None
    weights = [r.weight for r in chosen]
    total = math.fsum(weights)
    if not total > 0:
        weights, total = [1.0] * len(chosen), float(len(chosen))
    scores = [r.score if r.verdict == Verdict.OK else 0.0 for r in chosen]
    earned = math.fsum(w * s for w, s in zip(weights, scores, strict=True))
    return round(100.0 * earned / total, 6)


def totals(results: list[CaseResult]) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for r in results:
        counts[str(r.verdict)] = counts.get(str(r.verdict), 0) + 1
    return {
        "public_score": problem_score(results, "public"),
        "hidden_score": problem_score(results, "hidden"),
        "verdicts": counts,
    }
