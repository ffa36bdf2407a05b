"""The leaderboards' change counter: bumped in the flush that changes anything a board
shows (a judging's end, a rescore, a rejudge, a disqualification, the reveal, the
freeze), in that change's own transaction, by whichever process makes it (an API
process or a worker). Readers compare it to decide whether a cached board is stale.

Listeners on every ORM session rather than a call at each write: a new write path
cannot forget it. Bulk UPDATE statements bypass the ORM and must call `bump` themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import Any

from sqlalchemy import (
    Select,
    String,
    bindparam,
    cast,
    event,
    func,
    insert,
    inspect,
    select,
    update,
)
from sqlalchemy.orm import Session

from api.db.models import (
    BoardState,
    Case,
    Contest,
    ContestProblem,
    Problem,
    Registration,
    Submission,
    Team,
)

# The columns a leaderboard reads, by model; a change to any of them moves the boards.
WATCHED: dict[type, tuple[str, ...]] = {
    Submission: ("status", "public_score", "hidden_score", "disqualified", "version_id"),
    Team: ("disqualified", "name"),
    Contest: ("freeze_at", "hidden_revealed", "baselines", "is_current", "start_at"),
    ContestProblem: ("version_id", "problem_id", "contest_id"),
    Registration: ("status", "contest_id", "team_id"),
}


def version(db: Session) -> int:
    return int(db.scalar(select(BoardState.version).where(BoardState.id == 1)) or 0)


@dataclass(frozen=True)
class Snapshot:
    """What decides whether a cached board or problem page is fresh, in one query."""

    version_id: int | None  # the version the contest uses; None: not in it, or no problem
    counter: int
    frozen: bool  # a freeze is set
    revealed: bool  # hidden scores are revealed
    weights: str = ""  # with weights=True: the current version's case weights, as text
    contest_id: int | None = None  # the contest's (None: no such problem in it)


def _snapshot_query(weights: bool, current: bool) -> Select:
    """Of the problem `slug` in the contest `contest` (`current`: the current contest)."""
    version = func.coalesce(ContestProblem.version_id, Problem.current_version_id)
    columns = [
        version,
        func.coalesce(BoardState.version, 0),
        Contest.freeze_at.is_not(None),
        func.coalesce(Contest.hidden_revealed, False),
        Contest.id,
    ]
    if weights:
        listed = func.aggregate_strings(Case.name + "=" + cast(Case.weight, String), ",")
        columns.append(select(listed).where(Case.version_id == version).scalar_subquery())
    which = Contest.is_current.is_(True) if current else Contest.id == bindparam("contest")
    return (
        select(*columns)
        .select_from(Problem)
        .join(ContestProblem, ContestProblem.problem_id == Problem.id)
        .join(Contest, Contest.id == ContestProblem.contest_id)
        .outerjoin(BoardState, BoardState.id == 1)
        .where(Problem.slug == bindparam("slug"), which)
        .order_by(Contest.id)
        .limit(1)
    )


# Built once: making the statement cost more CPU than running it (it is on every read).
_SNAPSHOTS = {(w, c): _snapshot_query(w, c) for w in (False, True) for c in (False, True)}


def snapshot(db: Session, slug: str, weights: bool = False, contest: int | None = None) -> Snapshot:
    """`weights`: the case weights too (the problem page shows them; a weight's change
    moves no board until a rescore applies it, so the counter does not say it).
    `contest`: the contest's id; None: the current contest."""
    params = {"slug": slug} if contest is None else {"slug": slug, "contest": contest}
    found = db.execute(_SNAPSHOTS[weights, contest is None], params).first()
    if found is None:
        return Snapshot(None, 0, False, False)
    version_id, counter, frozen, revealed, contest_id, *listed = found
    text = str(listed[0]) if listed else ""
    return Snapshot(version_id, int(counter), bool(frozen), bool(revealed), text, contest_id)


def bump(db: Session) -> None:
    done = db.execute(
        update(BoardState).where(BoardState.id == 1).values(version=BoardState.version + 1)
    )
    if not getattr(done, "rowcount", 1):  # a schema made without migration 0005's row
        db.execute(insert(BoardState).values(id=1, version=1))


def _moves_board(obj: Any, new: bool) -> bool:
    fields = WATCHED.get(type(obj))
    if fields is None:
        return False
    if new:  # a new submission counts once judged; a new team or contest row always
        return not isinstance(obj, Submission) or obj.status == "done"
    state = inspect(obj)
    for name in fields:
        history = state.attrs[name].history
        if not history.has_changes():
            continue
        # A status moves the board only into or out of "done" (not queued -> running).
        if name != "status" or "done" in (*history.added, *history.deleted):
            return True
    return False


MOVED = "memorace_board_moved"  # in Session.info: a flush of this transaction moved a board


@event.listens_for(Session, "before_flush")
def _before_flush(session: Session, _context: Any, _instances: Any) -> None:
    changed = chain(
        ((o, True) for o in session.new),
        ((o, False) for o in session.dirty),
        ((o, True) for o in session.deleted),
    )
    if any(_moves_board(o, new) for o, new in changed):
        session.info[MOVED] = True


@event.listens_for(Session, "before_commit")
def _before_commit(session: Session) -> None:
    """The bump is the transaction's last statement: the counter's row stays locked
    (PostgreSQL) only while the commit runs, not for a long rescore's whole length."""
    session.flush()
    if session.info.pop(MOVED, False):
        bump(session)


@event.listens_for(Session, "after_rollback")
def _after_rollback(session: Session) -> None:
    session.info.pop(MOVED, None)
