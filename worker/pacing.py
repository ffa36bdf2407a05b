"""Pacing of hidden cases: a contestant must not read how long a hidden case took.

Before the reveal a contestant sees a hidden case's verdict at most, and the judging's
events show public results as they come and the end. A planner that sleeps in
proportion to a hidden case's property would still be read back from *when* the next
public result or the end arrives (about 9-10 bits per submission measured on a 7-case
hidden split). So, once a hidden case's result is stored (organizers see it at once),
the worker waits until the case's whole budget has passed since it started: its time
limit plus a fixed allowance for verification. Every hidden case then takes the same
time whatever the planner does, unless verification alone overruns the allowance
(logged: that judging's end then carries some time).

The price is worker time: a submission holds its worker for every hidden case's full
budget. Contests that mind it judge hidden cases only at the end (api.actions.finals).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from judge.package import CaseSpec
from judge.scoring import CaseResult

log = logging.getLogger("memorace.worker")
VERIFY_ALLOWANCE_S = 2.0  # writing the input, verifying the plan, storing it
VERIFY_SHARE = 0.1  # and a share of the limit: big cases (slow to verify) get long limits


def budget_s(time_limit_s: float) -> float:
    """How long a hidden case holds its worker: its limit and an allowance for the rest."""
    return time_limit_s + VERIFY_ALLOWANCE_S + VERIFY_SHARE * time_limit_s


class HiddenPace:
    """`start` before each case, `hold` after its result is stored."""

    def __init__(
        self,
        time_limit_s: float,
        active: bool,
        judging_id: int,
        hidden: int,
        sleep: Callable[[float], object] = time.sleep,
    ):
        self.budget, self.active, self.judging_id = budget_s(time_limit_s), active, judging_id
        self.sleep = sleep
        self.hidden_left = hidden  # hidden cases not yet held
        self.started: float | None = None
        self.in_hidden = False

    def start(self, spec: CaseSpec) -> None:
        self.started, self.in_hidden = time.monotonic(), spec.split != "public"

    def hold(self, result: CaseResult) -> None:
        if not self.active or result.split == "public" or self.started is None:
            return  # a build failure's results come at once and tell nothing of a case
        left = self.started + self.budget - time.monotonic()
        if left > 0:
            self.sleep(left)
        else:
            log.warning(
                "hidden case %s overran its paced budget of %.1f s by %.1f s: the end of "
                "judging %s tells that much",
                result.case, self.budget, -left, self.judging_id,
            )  # fmt: skip
        self.started = None
        self.hidden_left -= 1

    def hold_failure(self) -> None:
        """A judge error during a hidden case (the judging goes back to the queue or
        fails): it is told when every hidden case left would have ended, else its moment
        would say how long the planner ran on this one."""
        if not self.active or not self.in_hidden or self.started is None:
            return
        left = self.started + self.budget * max(1, self.hidden_left) - time.monotonic()
        if left > 0:
            self.sleep(left)


__all__ = ["HiddenPace", "budget_s"]
