"""Problem type `online`: an allocator answers each request as it comes (README.md).

Judged interactively (`interactive = True`): the pipeline hands the case's `script`
to the sandbox's dialog and keeps the answers as a transcript, which is an `offset`
plan of the same trace: verified, rescored and drawn like one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from judge.csvtable import INT_LIMIT
from judge.types.base import Verification
from judge.types.offset.verifier import ends, lower_bound
from judge.types.online.case import OnlineCase, case_events, format_events, read_case
from judge.types.online.plan import Transcript, read_transcript, transcript_csv
from judge.types.online.verifier import first_violation, lifespans, verify
from judge.verdict import Verdict


class OnlineType:
    name = "online"
    case_suffix = ".events"
    bound_unit = "bytes"
    plan_file = "transcript.csv"
    interactive = True

    def parse_case(self, path: Path, capacity: int | None) -> OnlineCase:
        return read_case(path, INT_LIMIT if capacity is None else capacity)

    def parse_plan(self, path: Path, case: OnlineCase) -> Transcript:
        return read_transcript(path, case)

    def verify(self, case: OnlineCase, plan: Transcript) -> Verification:
        return verify(case, plan)

    def lower_bound(self, case: OnlineCase) -> int:
        return lower_bound(case)  # type: ignore[arg-type]  # the same columns as offset's

    def score(self, case: OnlineCase, lower_bound: int, verification: Verification) -> float:
        if verification.verdict != Verdict.OK:
            return 0.0
        peak = verification.peak or 0
        return 1.0 if peak == 0 else lower_bound / peak

    def write_planner_input(
        self, case: OnlineCase, directory: Path, limits: dict[str, Any]
    ) -> None:
        """Only the sizes of the case: the events come one by one on stdin."""
        meta = {
            "type": self.name,
            "capacity": case.capacity,
            "events": case.events,
            "requests": len(case),
            "hints": list(case.hint_names),
            **limits,
        }
        (directory / "case.json").write_text(json.dumps(meta, indent=2) + "\n")

    def script(self, case: OnlineCase) -> bytes:
        """Everything the judge writes to the allocator, in order (dialog.converse cuts it
        after each request line)."""
        body = format_events(case.hint_names, case_events(case))
        return f"capacity {case.capacity}\n{body}end\n".encode()

    def transcript(self, case: OnlineCase, answers: list[int]) -> str:
        return transcript_csv(case, answers)

    def first_violation(self, case: OnlineCase, answers: list[int]) -> int | None:
        import numpy as np

        return first_violation(case, Transcript(np.array(answers, dtype=np.int64)))

    def picture(self, case: OnlineCase, plan: Transcript, lower_bound: int) -> str:
        """The answers as rectangles in event time x address, as an `offset` plan."""
        from judge.pictures.placement import plan_svg

        k = plan.answered
        lower, upper = lifespans(case, k)
        peak = int(ends(plan.offset, case.size[:k]).max()) if k else 0
        return plan_svg(
            lower, upper, case.size[:k], plan.offset, case.capacity, peak, lower_bound,
            ids=case.ids[:k],
        )  # fmt: skip


ONLINE = OnlineType()
