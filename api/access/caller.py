"""Who asks, as the hot reads need it (api.reads.readcache): the user's id, team and role
without an ORM row, so that an answer found in a cache needs no database session. The
row is made (from the token cache, or found by the full check) only when a read must
compute its answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from sqlalchemy.orm import Session

from api.access import tokencache
from api.db.models import User


class TeamName(NamedTuple):
    name: str


@dataclass(frozen=True)
class Caller:
    """Duck-types as much of a User as the hot reads, the leaderboard and the pages'
    frame use: id, username, team_id, team.name, is_admin."""

    id: int
    username: str
    team_id: int | None
    team: TeamName | None
    is_admin: bool
    entry: tokencache.Entry | None = None  # the token cache's check, or
    user: User | None = None  # the row the full check found (in the request's session)
    contests: tuple[int, ...] | None = None  # its team's registrations; None: not known

    @classmethod
    def of_entry(cls, entry: tokencache.Entry) -> Caller:
        u, t = entry.user, entry.team
        team = TeamName(t["name"]) if t else None
        admin = bool(u["is_admin"])
        return cls(u["id"], u["username"], u["team_id"], team, admin, entry, None, entry.contests)

    @classmethod
    def of_user(cls, user: User) -> Caller:
        team = TeamName(user.team.name) if user.team else None
        return cls(user.id, user.username, user.team_id, team, user.is_admin, user=user)

    def sees_current(self, current: int) -> bool:
        """Whether a request naming no contest means the current one (`current`) for this
        caller, known without I/O (api.actions.contests.resolve's rule); False: ask the route."""
        if self.is_admin or self.team_id is None:
            return True
        return self.contests is not None and current in self.contests

    def row(self, db: Session) -> User:
        """The user as a row of `db` (no query: attached from the token cache's columns)."""
        if self.user is not None:
            return self.user
        assert self.entry is not None
        return tokencache.attach_user(db, self.entry)
