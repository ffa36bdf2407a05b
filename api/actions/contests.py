"""Several contests per installation (issue 37): each has its problems (a problem
version may serve several), its window, freeze, hidden-case settings and registered
teams. A request that names no contest means the caller's: organizers and visitors get
the installation's current contest; a team gets it too when registered there, else
the contest it is registered in (the newest, if several).

Who sees a contest: organizers, always; a team, the contests it is registered in
(approved); a visitor, any contest. Nobody but organizers sees a contest's problems or
boards before its start. A contest one may not see answers exactly as one that does
not exist: no probing of names.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from api.db.models import Contest, ContestProblem, Problem, Registration, Submission, aware, utcnow
from api.errors import Conflict, NotFound, ServiceError

SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
HELD = "memorace_contests"  # Session.info: the contest rows a request read (held)
CURRENT = "memorace_current_contest"  # ... and the current one


class Viewer(Protocol):  # a User or an api.access.caller.Caller
    is_admin: bool
    team_id: int | None


def current(db: Session) -> Contest:
    """The installation's current contest (made if the database has none, as a fresh
    one after the migrations always has: id 1)."""
    known = db.info.get(CURRENT)
    if known is not None:
        return known  # type: ignore[no-any-return]
    row = db.scalar(select(Contest).where(Contest.is_current.is_(True)).order_by(Contest.id))
    if row is None:
        row = db.get(Contest, 1)
        if row is None:
            row = Contest(slug="main", is_current=True)
            db.add(row)
            db.flush()
    db.info[CURRENT] = row
    return row


def held(db: Session, contest_id: int) -> Contest | None:
    """The contest row, read once per session: a page of submissions asks for each
    row's (the identity map holds rows weakly: one not referenced is read again)."""
    rows: dict[int, Contest | None] = db.info.setdefault(HELD, {})
    if contest_id not in rows:
        rows[contest_id] = db.get(Contest, contest_id)
    return rows[contest_id]


def of_submission(db: Session, sub: Submission) -> Contest:
    """The contest a submission was made in; a baseline's (none): the current one."""
    row = held(db, sub.contest_id) if sub.contest_id is not None else None
    return row if row is not None else current(db)


def find(db: Session, ref: str) -> Contest | None:
    """By slug, or by id written as digits."""
    ref = ref.strip()
    if ref.isascii() and ref.isdigit() and len(ref) < 10:
        return db.get(Contest, int(ref))
    return db.scalar(select(Contest).where(Contest.slug == ref)) if SLUG.fullmatch(ref) else None


def registered(db: Session, team_id: int | None, status: str = "approved") -> list[int]:
    if team_id is None:
        return []
    query = select(Registration.contest_id).where(
        Registration.team_id == team_id, Registration.status == status
    )
    return sorted(db.scalars(query))


def registered_teams(db: Session, contest: Contest) -> list[int]:
    query = select(Registration.team_id).where(
        Registration.contest_id == contest.id, Registration.status == "approved"
    )
    return sorted(db.scalars(query))


def may_see(db: Session, viewer: Viewer | None, contest: Contest) -> bool:
    if viewer is None or viewer.is_admin:
        return True
    if viewer.team_id is None:
        return True  # an account without a team sees what visitors see
    return contest.id in registered(db, viewer.team_id)


def resolve(db: Session, viewer: Viewer | None, asked: str | None = None) -> Contest:
    """The contest a request means (`asked`: its `contest` parameter, a slug or an id;
    None: the default; present but blank: no contest, not the default)."""
    if asked is not None:
        row = find(db, asked)
        if row is None or not may_see(db, viewer, row):
            raise NotFound(f"no contest '{asked[:64]}'")
        return row
    row = current(db)
    if viewer is None or viewer.is_admin or viewer.team_id is None:
        return row
    mine = registered(db, viewer.team_id)
    if row.id in mine or not mine:
        return row
    found = db.get(Contest, mine[-1])
    assert found is not None
    return found


def started(contest: Contest) -> bool:
    return contest.start_at is None or utcnow() >= aware(contest.start_at)


def check_started(contest: Contest, viewer: Viewer | None) -> None:
    """Before its start, a contest's problems and boards are the organizers' only."""
    if not started(contest) and not (viewer is not None and viewer.is_admin):
        assert contest.start_at is not None
        raise NotFound(f"contest '{contest.slug}' starts at {aware(contest.start_at).isoformat()}")


def open_for(db: Session, viewer: Viewer | None, asked: str | None = None) -> Contest:
    """`resolve`, then `check_started`: what the problem and board routes ask."""
    contest = resolve(db, viewer, asked)
    check_started(contest, viewer)
    return contest


def pinned_version(db: Session, contest: Contest, problem: Problem) -> int | None:
    """The version of `problem` the contest uses; None: it is not in the contest."""
    row = db.scalar(
        select(ContestProblem).where(
            ContestProblem.contest_id == contest.id, ContestProblem.problem_id == problem.id
        )
    )
    if row is None:
        return None
    return row.version_id if row.version_id is not None else problem.current_version_id


def version_ids(db: Session, contest: Contest) -> list[int]:
    """The problem versions `contest` uses, in its order (one query: pinned_version's
    rule for all its problems)."""
    version = func.coalesce(ContestProblem.version_id, Problem.current_version_id)
    query = (
        select(version)
        .join(Problem, Problem.id == ContestProblem.problem_id)
        .where(ContestProblem.contest_id == contest.id)
        .order_by(ContestProblem.position, Problem.slug)
    )
    return [i for i in db.scalars(query) if i is not None]


def contests_of_version(db: Session, version_id: int, problem_id: int) -> list[int]:
    """The contests that use a problem version (pinned to it, or following the current)."""
    problem = db.get(Problem, problem_id)
    follows = problem is not None and problem.current_version_id == version_id
    query = select(ContestProblem.contest_id).where(
        ContestProblem.problem_id == problem_id,
        (ContestProblem.version_id == version_id)
        | (ContestProblem.version_id.is_(None) if follows else ContestProblem.id < 0),
    )
    return sorted(db.scalars(query))


def unrevealed_sharing(db: Session, contest: Contest) -> list[str]:
    """The other contests, not revealed, that use one of `contest`'s problem versions:
    revealing `contest` shows those versions' hidden cases to whoever reads its board
    (visitors too), theirs included."""
    versions = set(version_ids(db, contest))
    others = db.scalars(
        select(Contest).where(Contest.id != contest.id, Contest.hidden_revealed.is_(False))
    )
    return [c.slug for c in others if versions & set(version_ids(db, c))]


def add_problem(db: Session, contest: Contest, problem: Problem, version_id: int | None) -> None:
    row = db.scalar(
        select(ContestProblem).where(
            ContestProblem.contest_id == contest.id, ContestProblem.problem_id == problem.id
        )
    )
    if row is None:
        last = db.scalar(
            select(func.max(ContestProblem.position)).where(ContestProblem.contest_id == contest.id)
        )
        row = ContestProblem(contest_id=contest.id, problem_id=problem.id, position=(last or 0) + 1)
        db.add(row)
    row.version_id = version_id
    db.flush()


def add_new_problem(db: Session, problem: Problem) -> None:
    """A newly imported problem joins the contest while the installation has one;
    with several, the organizer puts it where it belongs (a running contest does not
    get tomorrow's problem)."""
    if db.scalar(select(func.count(Contest.id))) == 1:
        add_problem(db, current(db), problem, None)


def remove_problem(db: Session, contest: Contest, problem: Problem) -> bool:
    row = db.scalar(
        select(ContestProblem).where(
            ContestProblem.contest_id == contest.id, ContestProblem.problem_id == problem.id
        )
    )
    if row is not None:
        db.delete(row)
        db.flush()
    return row is not None


def unregister(db: Session, contest: Contest, team_id: int) -> bool:
    row = db.scalar(
        select(Registration).where(
            Registration.contest_id == contest.id, Registration.team_id == team_id
        )
    )
    if row is not None:
        db.delete(row)
        db.flush()
    return row is not None


def register(db: Session, contest: Contest, team_id: int, status: str = "approved") -> Registration:
    if status not in ("approved", "pending"):
        raise ServiceError("a registration is approved or pending", 422)
    row = db.scalar(
        select(Registration).where(
            Registration.contest_id == contest.id, Registration.team_id == team_id
        )
    )
    if row is None:
        row = Registration(contest_id=contest.id, team_id=team_id)
        db.add(row)
    row.status = status
    db.flush()
    return row


def create(db: Session, slug: str, title: str, start_at: Any = None) -> Contest:
    """A new contest; without `start_at` it is open at once (as the first one is):
    set a start before giving it problems that must wait."""
    slug = slug.strip()
    if not SLUG.fullmatch(slug) or slug.isdigit():
        raise ServiceError(
            "a contest's slug has 1 to 64 of a-z, 0-9 and '-', starts with a letter or digit "
            "and is not all digits",
            422,
        )
    if db.scalar(select(Contest.id).where(Contest.slug == slug)) is not None:
        raise Conflict(f"contest '{slug}' exists already")
    row = Contest(
        slug=slug, title=(title.strip() or slug)[:200], is_current=False, start_at=start_at
    )
    db.add(row)
    db.flush()
    return row


def make_current(db: Session, contest: Contest) -> None:
    for other in db.scalars(select(Contest).where(Contest.is_current.is_(True))):
        other.is_current = False
    contest.is_current = True
    db.flush()
    db.info[CURRENT] = contest


def summary(db: Session, contest: Contest) -> dict[str, Any]:
    """What anyone who may see the contest sees of it in a list."""

    def iso(v: Any) -> str | None:
        return aware(v).isoformat() if v else None

    return {
        "id": contest.id,
        "slug": contest.slug,
        "title": contest.title,
        "current": contest.is_current,
        "start_at": iso(contest.start_at),
        "end_at": iso(contest.end_at),
        "freeze_at": iso(contest.freeze_at),
        "hidden_revealed": contest.hidden_revealed,
        "signup": contest.signup,
    }


def visible(db: Session, viewer: Viewer | None) -> list[Contest]:
    """may_see's rule for every contest, the team's registrations read once."""
    rows = list(db.scalars(select(Contest).order_by(Contest.id)))
    if viewer is None or viewer.is_admin or viewer.team_id is None:
        return rows
    mine = set(registered(db, viewer.team_id))
    return [c for c in rows if c.id in mine]
