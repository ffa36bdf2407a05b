"""What one transaction of an API process changed, as far as the read caches care.

A contestant's upload writes one submission and its judging (and the bytes, which no
kept answer shows); clearing every kept answer in every API process for it left both
processes' boards and every team's list to the database at once, every few seconds on
a contest day (measured at 500 clients: the reads' p99 went from ~20 ms without
uploads to 150-500 ms with one upload every 5 s). So a transaction that wrote only
submissions and judgings of one team clears what a worker's news of that team clears
(api.reads.readcache.hear): that team's lists and the organizers', every list that shows a
queue position when a judging was added or changed, the boards when a board moved.
Anything else it wrote, or more than one team, clears everything, as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import inspect

from api import news
from api.db.models import Judging, Submission

# Rows that no kept answer shows: a write of them alone clears nothing. Bookkeeping
# written often (token use, web sessions, the login throttle, heartbeats, the news) and
# the blob store's rows (an upload's bytes), clarifications (read uncached: api.actions.messages)
# and the audit log.
UNSEEN_TABLES = frozenset(
    {
        "api_tokens",
        "web_sessions",
        "login_throttle",
        "workers",
        "news",
        "blobs",
        "blob_chunks",
        "messages",
        "audit_log",  # read uncached (the audit page, its export)
    }
)
BOARD_TABLE = "board_state"  # its counter moves when a board does (api.db.board.bump)


@dataclass
class Written:
    everything: bool = False  # something else changed: every kept answer goes
    teams: set[int] = field(default_factory=set)  # whose submissions changed
    submissions: set[int] = field(default_factory=set)
    queue: bool = False  # a judging was added or changed: queue positions may move
    board: bool = False

    def note_row(self, obj: Any, session: Any) -> None:
        """A flushed ORM object (new, changed or deleted)."""
        if table_of(obj) in UNSEEN_TABLES:
            return
        if isinstance(obj, Submission) and obj.team_id is not None:
            self.teams.add(obj.team_id)
            if obj.id is not None:
                self.submissions.add(obj.id)
        elif isinstance(obj, Judging):
            self.queue = True
            sub = _loaded_submission(session, obj.submission_id)
            if sub is None or sub.team_id is None:
                self.everything = True  # whose it is would take a query: say everything
            else:
                self.teams.add(sub.team_id)
        else:
            self.everything = True

    def note_statement(self, table: str | None) -> None:
        """A Core or ORM DML statement on `table`."""
        if table == BOARD_TABLE:
            self.board = True
        elif table not in UNSEEN_TABLES:
            self.everything = True

    def anything(self) -> bool:
        return self.everything or bool(self.teams) or self.queue or self.board

    def news(self, auth: bool) -> news.News:
        """The news that clears what this transaction changed (ours: origin ORIGIN)."""
        if self.everything or len(self.teams) != 1:
            return news.News(0, auth=auth, board=self.board, origin=news.ORIGIN)
        sub_id = next(iter(self.submissions)) if len(self.submissions) == 1 else 0
        team = next(iter(self.teams))
        return news.News(sub_id, self.queue, team, self.board, auth, news.ORIGIN)


def table_of(obj: Any) -> str | None:
    """The table an ORM object is a row of (None: not a mapped row)."""
    return getattr(getattr(type(obj), "__table__", None), "name", None)


def _loaded_submission(session: Any, sub_id: int | None) -> Submission | None:
    """The submission if the session holds it already (no query in a flush)."""
    if sub_id is None:
        return None
    key = inspect(Submission).identity_key_from_primary_key((sub_id,))
    found = session.identity_map.get(key)
    return found if isinstance(found, Submission) else None
