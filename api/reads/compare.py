"""Where the points went: per case of a submission, its score beside the best score of
any team and of the best reference planner (api.actions.baselines) on the same cases, sorted by
the problem-score points it would gain by matching the better of the two.

Hidden cases only for whoever sees hidden cases whole (api.reads.hidden.hidden_policy):
before the reveal a contestant's comparison holds the public cases alone. Other teams'
submissions made after a freeze stay out of a contestant's view, as on the board.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from api.actions import contests
from api.actions.submissions import on_the_board
from api.db.models import Baseline, CaseResultRow, Judging, Submission, Team, User, aware
from api.reads.hidden import hidden_policy


def comparison(db: Session, sub: Submission, viewer: User) -> dict[str, Any]:
    everything = hidden_policy(db, viewer, contests.of_submission(db, sub)) == "all"
    judging = db.get(Judging, sub.current_judging_id) if sub.current_judging_id else None
    mine = [r for r in (judging.results if judging else []) if everything or r.split == "public"]
    teams = _best(db, sub, viewer, system=False)
    refs = _best(db, sub, viewer, system=True)
    weights: dict[str, float] = {}
    for r in mine:
        weights[r.split] = weights.get(r.split, 0.0) + r.weight
    rows = []
    for r in mine:
        own = _scored(r.verdict, r.score)
        team = teams.get(r.case)
        ref, ref_name = refs.get(r.case, (None, ""))[0], refs.get(r.case, (None, ""))[1]
        target = max((v for v in (team and team[0], ref) if v is not None), default=own)
        share = r.weight / weights[r.split] if weights[r.split] > 0 else 0.0
        rows.append({
            "case": r.case, "split": r.split, "verdict": r.verdict, "score": own,
            "best_team_score": team[0] if team else None,
            "best_reference_score": ref, "best_reference": ref_name or None,
            "gain_points": max(target - own, 0.0) * share * 100,
            "request_us_mean": r.request_us_mean, "request_us_p99": r.request_us_p99,
        })  # fmt: skip
    rows.sort(key=lambda row: (-row["gain_points"], row["case"]))
    return {"submission_id": sub.id, "hidden_included": everything, "rows": rows}


def _scored(verdict: str, score: float | None) -> float:
    return float(score or 0.0) if verdict == "OK" else 0.0


def _best(db: Session, sub: Submission, viewer: User, system: bool) -> dict[str, tuple[float, str]]:
    """{case: (best OK score, who: a team's name or a baseline's level)} over the current
    judgings of the version's judged submissions (contestants', or the baselines')."""
    contest = contests.of_submission(db, sub)
    if system and not contest.baselines:
        return {}
    who = Baseline.name if system else Team.name
    query = (
        select(CaseResultRow.case, func.max(CaseResultRow.score), who)
        .join(Submission, Submission.current_judging_id == CaseResultRow.judging_id)
        .join(Team, Team.id == Submission.team_id)
        .where(*on_the_board(sub.version_id, system, contest.id), CaseResultRow.verdict == "OK")
        .group_by(CaseResultRow.case, who)
    )
    if system:
        query = query.join(Baseline, Baseline.submission_id == Submission.id)
    freeze = contest.freeze_at
    if freeze and not viewer.is_admin and not system:
        query = query.where(
            (Submission.created_at < aware(freeze)) | (Submission.team_id == viewer.team_id)
        )
    best: dict[str, tuple[float, str]] = {}
    for case, score, name in db.execute(query):
        if case not in best or score > best[case][0]:
            best[case] = (float(score), name)
    return best
