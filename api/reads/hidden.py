"""What a viewer may see of hidden cases: organizers see everything; contestants,
before the reveal, a hidden case's name and split and (by the contest's hidden_detail)
its verdict or only that it was judged, and nothing of how long it took."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy.orm import Session

from api.actions import contests
from api.db.models import JUDGING_UNDERWAY, CaseResultRow, Contest, Judging, Submission, User

# What a viewer sees of hidden cases: "all" (organizers; everybody after the reveal),
# or the contest's hidden_detail before it: "verdict" (the verdict alone) or "judged"
# (only that the case was judged).
HIDDEN_DETAILS = ("verdict", "judged")
JUDGED = "JUDGED"  # the verdict shown for a hidden case under hidden_detail = "judged"
# Every field of a case result that depends on the case (all but its name and split).
# (The online type's request times are a timing channel, like time_s: withheld alike.)
WITHHELD = ("score", "message", "peak", "lower_bound", "time_s", "makespan_us", "log",
            "plan_digest", "request_us_mean", "request_us_p99")  # fmt: skip


def sees_hidden(user: User | None, revealed: bool) -> bool:
    """Whether `user` sees hidden cases whole: organizers, and everybody after the reveal."""
    return bool(user and user.is_admin) or revealed


def hidden_policy(db: Session, user: User | None, contest: Contest | None = None) -> str:
    """By `contest`'s reveal and detail (None: the current contest's). A submission's
    hidden cases follow the contest it was made in (contests.of_submission)."""
    contest = contest if contest is not None else contests.current(db)
    if sees_hidden(user, contest.hidden_revealed):
        return "all"
    detail = contest.hidden_detail
    return detail if detail in HIDDEN_DETAILS else "judged"  # unknown: the stricter


def hidden_visible(db: Session, user: User | None, contest: Contest | None = None) -> bool:
    return hidden_policy(db, user, contest) == "all"


def result_dict(row: CaseResultRow, policy: str) -> dict[str, Any]:
    """A case result as `policy` lets the viewer see it. A withheld hidden case keeps
    its name and split (public in the problem) and, under "verdict", its verdict;
    every other field is null, so that nothing derived from the case can leak."""
    withheld = row.split != "public" and policy != "all"
    shown = dict.fromkeys(WITHHELD) if withheld else {k: getattr(row, k) for k in WITHHELD}
    verdict = JUDGED if withheld and policy == "judged" else row.verdict
    return {"case": row.case, "split": row.split, "verdict": verdict, **shown,
            "withheld": withheld}  # fmt: skip


def shown_detail(sub: Submission, judging: Judging | None, results: list[dict], policy: str) -> str:
    """The status line as the viewer may see it: before the reveal, the final verdict
    counts cover the public cases only, and a judge failure's reason (which may
    quote a hidden case) is left out."""
    detail = sub.status_detail
    if policy == "all":
        return detail
    # The two failure lines worker.judging.fail_judging writes: "the judge failed
    # [after N attempts] (REASON); retrying | this is our fault, ...".
    failed = re.fullmatch(
        r"(the judge failed(?: after \d+ attempts)?) \(.*\)(; [^()]*)", detail, re.S
    )
    if failed:
        return failed.group(1) + failed.group(2)
    if sub.status != "done" or judging is None or not detail.startswith("judged"):
        return detail
    counts: dict[str, int] = {}
    for r in results:
        if not r["withheld"]:
            counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    shown = ", ".join(f"{n} {v}" for v, n in sorted(counts.items())) or "no public cases"
    hidden = sum(1 for r in results if r["withheld"])
    return f"judged ({judging.kind}): {shown}" + (f"; {hidden} hidden judged" if hidden else "")


def hides_progress(judging: Judging | None, policy: str) -> bool:
    """Whether the viewer sees only the public cases of a judging that has not ended:
    hidden results arriving one by one would tell how long each hidden case took (a
    planner can make that time tell its data), so before the reveal contestants get
    the hidden ones only when the judging ends, all at once."""
    return policy != "all" and (judging is None or judging.status in JUDGING_UNDERWAY)


def judged_before_hidden(rows: list[CaseResultRow]) -> list[CaseResultRow]:
    """The public results of a judging that has not ended. Workers start a judging's
    hidden cases only once every public case is done (worker.cases), so no public case
    runs beside or after a hidden one: neither its result nor when it arrives tells
    anything of a hidden case."""
    return sorted((r for r in rows if r.split == "public"), key=lambda r: r.case)


RUNNING = re.compile(r"(judging on .+): \d+ of \d+ cases")  # worker.judging's progress line


def progress_detail(detail: str, done: int, total: int, hiding: bool) -> str:
    """The worker's progress line with the count of the results shown beside it (the
    submission's row and its results are separate reads, and a case may commit between
    them); when `hiding`, counting the public cases only."""
    running = RUNNING.fullmatch(detail)
    if running is None:
        return detail
    if not hiding:
        return f"{running.group(1)}: {done} of {total} cases"
    return f"{running.group(1)}: {done} of {total} public cases judged; the hidden ones later"
