"""When hidden cases run, and the final judging.

A contest's `hidden_judging` says when a submission meets the hidden cases:
- "submission" (the default): with every judging. A planner can then make a hidden
  case's time (and verdict) depend on the case; the worker paces each hidden case to its
  time budget before it moves on (worker.pacing), so the judging's end carries no
  planner-controlled time, but the verdicts (under hidden_detail "verdict") still do.
- "final": a judging runs the public cases only. At the end an organizer starts the
  final judging: each team's picks (up to `final_picks`, chosen by the team; its best
  public submission when it chose none) are judged again on every case, and the hidden
  board shows those at the reveal. Nothing a contestant sees before the end depends on
  a hidden case.
The baselines (the system team) meet hidden cases after the reveal, or in the final
judging, whichever comes first.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from api import queue
from api.actions import contests
from api.actions.audit import record
from api.actions.problems import all_current, current_version
from api.actions.submissions import lock_team
from api.db.models import (
    JUDGING_UNDERWAY,
    Contest,
    Judging,
    ProblemVersion,
    Submission,
    Team,
    User,
    aware,
    utcnow,
)  # fmt: skip
from api.errors import Conflict, Forbidden, NotFound, ServiceError

MODES = ("submission", "final")
MAX_PICKS = 20
ACTIVE = (*JUDGING_UNDERWAY, "final")


def contest_row(db: Session, sub: Submission | None = None) -> Contest:
    """`sub`'s contest; without one, the current contest."""
    return contests.of_submission(db, sub) if sub is not None else contests.current(db)


def final_mode(db: Session, contest: Contest | None = None) -> bool:
    return (contest or contest_row(db)).hidden_judging == "final"


def split_for(db: Session, sub: Submission, kind: str) -> str:
    """The split a judging of `sub` of this `kind` runs."""
    if kind == "final":
        return "all"
    if sub.team.system:  # a baseline serves every contest that holds its version
        return "all" if _revealed_for(db, sub.version) else "public"
    contest = contest_row(db, sub)
    if contest.hidden_judging != "final":
        return "all"
    # Hidden cases only in the final judging: a rejudge of a submission judged finally
    # (or whose final judging failed) is one again; any other judging, public only
    # (scores a submission met the hidden cases with in the other mode do not count).
    return "all" if kind == "rejudge" and _ever_final(db, sub) else "public"


def _revealed_for(db: Session, version: ProblemVersion) -> bool:
    held = contests.contests_of_version(db, version.id, version.problem_id)
    query = select(Contest.id).where(Contest.id.in_(held), Contest.hidden_revealed.is_(True))
    return db.scalar(query.limit(1)) is not None


def _ever_final(db: Session, sub: Submission) -> bool:
    found = select(Judging.id).where(Judging.submission_id == sub.id, Judging.kind == "final")
    return db.scalar(found.limit(1)) is not None


def paces_hidden(db: Session, sub: Submission, kind: str) -> bool:
    """Whether the worker paces this judging's hidden cases: a contestant would otherwise
    read how long each took from when the judging ends."""
    contest = contest_row(db, sub)
    return not (sub.team.system or kind == "final" or contest.hidden_revealed)


def picks(
    db: Session, team: Team, version: ProblemVersion, contest: Contest | None = None
) -> list[Submission]:
    """What the final judging takes of `team` on `version` (in `contest`): its picks, or
    else its best public submission (the earliest of equals)."""
    mine = _team_subs(team, version, contest).where(Submission.disqualified.is_(False))
    chosen = list(db.scalars(mine.where(Submission.final_pick.is_(True)).order_by(Submission.id)))
    if chosen:
        return chosen
    best = db.scalar(
        mine.where(Submission.public_score.is_not(None)).order_by(
            Submission.public_score.desc(), Submission.id
        )
    )
    return [best] if best is not None else []


def started(
    db: Session, version: ProblemVersion, team: Team | None = None, contest: Contest | None = None
) -> bool:
    """Whether the final judging of `version` (of `team`'s submissions, in `contest`) has
    been started: the picks are fixed from then on."""
    found = (
        select(Judging.id)
        .join(Submission)
        .where(Submission.version_id == version.id, Judging.kind == "final")
    )
    if team is not None:
        found = found.where(Submission.team_id == team.id)
    if contest is not None:  # its teams' (a baseline's final judging serves every contest)
        found = found.where(Submission.contest_id == contest.id)
        found = found.join(Team, Team.id == Submission.team_id).where(Team.system.is_(False))
    return db.scalar(found.limit(1)) is not None


def view(db: Session, team: Team, slug: str, contest: Contest | None = None) -> dict[str, Any]:
    contest = contest or contest_row(db)
    version = current_version(db, slug, contest)
    chosen = [s.id for s in picks(db, team, version, contest)]
    return {
        "problem": slug,
        "contest": contest.slug,
        "hidden_judging": contest.hidden_judging,
        "picks_allowed": contest.final_picks,
        "picked": [s.id for s in _picked(db, team, version, contest)],
        "judged_at_the_end": chosen,  # the picks, or the best public submission
        "locked": started(db, version, contest=contest),
    }


def choose(
    db: Session, user: User, slug: str, ids: list[int], contest: Contest | None = None
) -> dict[str, Any]:
    """A team's picks for the final judging of `slug` in `contest` (replacing earlier
    ones), while the contest runs."""
    team = user.team
    if team is None:
        raise Forbidden("only a team's members pick its submissions")
    lock_team(db, team.id)  # two requests at once must not make K + K picks
    contest = contest or contest_row(db)
    if contest.id not in contests.registered(db, team.id):
        raise Forbidden(f"team '{team.name}' is not registered in contest '{contest.slug}'")
    version = current_version(db, slug, contest)
    if contest.end_at is not None and utcnow() >= aware(contest.end_at):
        raise Conflict("the contest has ended: the picks are fixed")
    allowed = contest.final_picks
    if len(set(ids)) != len(ids):
        raise ServiceError("each submission at most once", 422)
    if len(ids) > allowed:
        raise ServiceError(f"at most {allowed} picks on this contest", 422)
    if started(db, version, contest=contest):
        raise Conflict("the final judging has started: the picks are fixed")
    chosen = [_own(db, team, version, i, contest) for i in ids]
    for sub in _picked(db, team, version, contest):
        sub.final_pick = False
    for sub in chosen:
        sub.final_pick = True
    detail = {"team": team.name, "submissions": ids}
    record(db, user, "final_picks", slug, detail, contest=contest.id)
    return view(db, team, slug, contest)


def _own(
    db: Session, team: Team, version: ProblemVersion, sub_id: int, contest: Contest
) -> Submission:
    sub = db.get(Submission, sub_id)
    if sub is None or sub.team_id != team.id or sub.contest_id != contest.id:
        raise NotFound(f"no submission {sub_id} of your team")
    if sub.version_id != version.id:
        raise ServiceError(f"submission {sub_id} is not for this problem's current version", 422)
    if sub.disqualified:
        raise ServiceError(f"submission {sub_id} is disqualified", 422)
    return sub


def _picked(
    db: Session, team: Team, version: ProblemVersion, contest: Contest | None = None
) -> list[Submission]:
    rows = _team_subs(team, version, contest).where(Submission.final_pick.is_(True))
    return list(db.scalars(rows.order_by(Submission.id)))


def _team_subs(
    team: Team, version: ProblemVersion, contest: Contest | None = None
) -> Select[tuple[Submission]]:
    query = select(Submission).where(
        Submission.team_id == team.id, Submission.version_id == version.id
    )
    return query if contest is None else query.where(Submission.contest_id == contest.id)


def start(
    db: Session, actor: User | None, slug: str | None, contest: Contest | None = None
) -> list[int]:
    """Queue the final judging of every team's picks (and the baselines) on `slug`'s current
    version, or every problem's. The first call fixes each team's picks (its best public
    submission where it chose none, at most `final_picks`); a later one queues again only
    what of those has no final judging (one that failed). Returns the new judgings' ids."""
    contest = contest or contest_row(db)
    if contest.hidden_judging != "final":
        raise Conflict("this contest judges hidden cases with every submission "
                       "(hidden_judging = submission): there is no final judging")  # fmt: skip
    if contest.end_at is not None and utcnow() < aware(contest.end_at):
        raise Conflict("the contest is still open: the final judging starts after its end")
    versions = [current_version(db, slug, contest)] if slug else all_current(db, contest)
    ids = []
    teams = set(contests.registered_teams(db, contest))
    for version in versions:
        for team in db.scalars(select(Team).where(Team.disqualified.is_(False))):
            if team.system:
                subs = _baseline_subs(db, team, version)
            elif team.id in teams:
                subs = _fixed_picks(db, team, version, contest)
            else:
                continue
            ids += [_queue_final(db, sub) for sub in subs if not _has_final(db, sub)]
    db.flush()
    record(
        db, actor, "final_judging", slug or "all problems", {"judgings": ids}, contest=contest.id
    )
    return ids


def _fixed_picks(
    db: Session, team: Team, version: ProblemVersion, contest: Contest
) -> list[Submission]:
    """The team's picks, fixed by the first start (marked, at most the contest's
    `final_picks`): a submission that ends later with a better public score does not
    join them."""
    most = contest.final_picks
    if started(db, version, team, contest):
        return _picked(db, team, version, contest)
    chosen = picks(db, team, version, contest)
    for sub in chosen[most:]:
        sub.final_pick = False
    for sub in chosen[:most]:
        sub.final_pick = True
    return chosen[:most]


def _baseline_subs(db: Session, team: Team, version: ProblemVersion) -> list[Submission]:
    rows = _team_subs(team, version).where(Submission.hidden_score.is_(None))
    return list(db.scalars(rows))


def _has_final(db: Session, sub: Submission) -> bool:
    found = select(Judging.id).where(
        Judging.submission_id == sub.id, Judging.kind == "final", Judging.status.in_(ACTIVE)
    )
    return db.scalar(found.limit(1)) is not None


def _queue_final(db: Session, sub: Submission) -> int:
    for old in db.scalars(
        select(Judging).where(Judging.submission_id == sub.id, Judging.status == "queued")
    ):
        old.status, old.reason = "superseded", "replaced by the final judging"
    judging = Judging(submission_id=sub.id, kind="final", priority=queue.PRIORITY_REJUDGE,
                      reason="the final judging: every case")  # fmt: skip
    db.add(judging)
    sub.status, sub.status_detail = "queued", "queued for the final judging"
    db.flush()
    return judging.id


__all__ = [
    "MAX_PICKS",
    "MODES",
    "choose",
    "paces_hidden",
    "picks",
    "split_for",
    "start",
    "view",
]
