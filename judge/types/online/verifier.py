"""The `online` rules checked on a transcript, in event order (README.md here).

The transcript of the first k requests is an `offset` plan of the trace cut just
after request k: the first request (in event order) that is misaligned, past the
capacity or overlapping a live allocation is the violation reported. Overlaps come
from the `offset` verifier's sweep, which meets requests in event order and stops at
the first that hits a live allocation (no all-pairs loop).
"""

from __future__ import annotations

import numpy as np

from judge.types.base import Verification
from judge.types.offset.case import OffsetCase
from judge.types.offset.plan import OffsetPlan
from judge.types.offset.verifier import ends, find_overlap
from judge.types.online.case import OnlineCase
from judge.types.online.plan import Transcript
from judge.verdict import Verdict


def lifespans(case: OnlineCase, answered: int) -> tuple[np.ndarray, np.ndarray]:
    """[lower, upper) per answered request, cut just after the last answered one."""
    lower, upper = case.lower[:answered], case.upper[:answered]
    if answered < len(case) and answered:
        upper = np.minimum(upper, case.lower[answered - 1] + 1)
    return lower, upper


def offset_view(case: OnlineCase, transcript: Transcript) -> tuple[OffsetCase, OffsetPlan]:
    """The answered requests as an `offset` case and plan (the CUDA replay runs these)."""
    k = transcript.answered
    lower, upper = lifespans(case, k)
    sized = OffsetCase(
        case.ids[:k], lower, upper, case.size[:k], case.alignment[:k], case.capacity, case.path
    )
    return sized, OffsetPlan(transcript.offset)


def verify(case: OnlineCase, transcript: Transcript) -> Verification:
    k, offset = transcript.answered, transcript.offset
    size, align = case.size[:k], case.alignment[:k]
    end = ends(offset, size)
    peak = int(end.max()) if k else 0
    first, message = _first_violation(case, offset, size, align, end)
    if first is not None:
        return Verification(Verdict.INVALID_PLAN, message, peak)
    if k < len(case):
        return Verification(
            Verdict.INVALID_PLAN,
            f"the transcript answers {k} of the case's {len(case)} requests",
            peak,
        )
    return Verification(Verdict.OK, "", peak)


def first_violation(case: OnlineCase, transcript: Transcript) -> int | None:
    """The request (0-based) of the first broken rule, if any."""
    k, offset = transcript.answered, transcript.offset
    size = case.size[:k]
    return _first_violation(case, offset, size, case.alignment[:k], ends(offset, size))[0]


def _first_violation(
    case: OnlineCase, offset: np.ndarray, size: np.ndarray, align: np.ndarray, end: np.ndarray
) -> tuple[int | None, str]:
    k = len(offset)
    bad = np.flatnonzero((offset % align != 0) | (offset > case.capacity - size))
    lone = int(bad[0]) if bad.size else k
    lower, upper = lifespans(case, k)
    hit = find_overlap(lower, upper, offset, end) if k else None
    if hit is not None and hit[1] < lone:
        live, i = hit
        return i, _overlap_message(case, offset, i, live)
    if lone < k:
        return lone, _alone_message(case, offset, lone)
    return None, ""


def _where(case: OnlineCase, i: int) -> str:
    return f"event {int(case.lower[i]) + 1}: request {case.ids[i]} ({int(case.size[i])} bytes"


def _alone_message(case: OnlineCase, offset: np.ndarray, i: int) -> str:
    off, size, align = int(offset[i]), int(case.size[i]), int(case.alignment[i])
    if off % align:
        return f"{_where(case, i)}) at offset {off}, not a multiple of its alignment {align}"
    return (
        f"{_where(case, i)}) at offset {off} uses bytes [{off}, {off + size}), "
        f"past the capacity {case.capacity}"
    )


def _overlap_message(case: OnlineCase, offset: np.ndarray, i: int, live: int) -> str:
    a, sa = int(offset[i]), int(case.size[i])
    b, sb = int(offset[live]), int(case.size[live])
    lo, hi = max(a, b), min(a + sa, b + sb)
    return (
        f"{_where(case, i)}) at offset {a} overlaps live allocation {case.ids[live]} "
        f"(bytes [{b}, {b + sb}), requested at event {int(case.lower[live]) + 1}) "
        f"in bytes [{lo}, {hi})"
    )
