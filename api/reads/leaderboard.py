"""The leaderboard of a problem: each team's best judged submission on its current version.

While the contest runs teams rank by public score. Once an admin reveals the
hidden scores, the same submissions (each team's best public one) rank by
their hidden score. After the freeze, other teams' newer submissions stay off
the board for contestants (admins see everything).

A board is computed once per change: each API process keeps it, keyed by the problem
version, the database's board counter (api.db.board) and the viewer's class, so a
request costs one query (api.db.board.snapshot) while nothing changes, and none while
api.reads.readcache holds that snapshot (at most its lifetime()). The ETag is the answer's
hash: the key's counter would tell a frozen board's reader of every other team's judging.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, joinedload

from api.access.caller import Caller
from api.actions import baselines, contests
from api.actions.problems import current_version
from api.actions.submissions import on_the_board
from api.db import board
from api.db.models import Contest, Submission, Team, User, aware
from api.reads import readcache, single_flight
from api.reads.hidden import hidden_visible

CACHED_BOARDS = 512  # per process: problems x viewer classes (one per team while frozen)


@dataclass(frozen=True)
class Board:
    etag: str
    body: dict[str, Any]
    encoded: bytes  # the JSON answer, encoded once


_cache: OrderedDict[tuple[Hashable, str], Board] = OrderedDict()
_lock = threading.Lock()
Viewer = User | Caller | None  # Caller: the hot reads' (api.access.caller)


def known_board(db: Session, slug: str, viewer: Viewer) -> Board | None:
    """The current contest's board from this process's caches alone (no I/O:
    api.reads.readcache holds the snapshot), or None: then cached_leaderboard."""
    return known_board_at(readcache.database(db), slug, viewer)


def known_board_at(database: Hashable, slug: str, viewer: Viewer) -> Board | None:
    """known_board by the database's key (readcache.database): no session needed. Only
    for a viewer whose contest is the current one, known without I/O (a Caller from the
    token cache, or nobody); a board is kept only once a route made it, after the
    contest's start."""
    state = readcache.known_snapshot_at(database, slug)
    if state is None or state.version_id is None or state.contest_id is None:
        return None
    if not means_current(viewer, state.contest_id):
        return None
    with _lock:
        return _cache.get(_key_at(database, state, viewer))


def means_current(viewer: Viewer, current: int) -> bool:
    """Whether `viewer`'s request that names no contest means the current one, known
    without I/O (api.actions.contests.resolve's rule); False: the route finds out."""
    if viewer is None or viewer.is_admin or viewer.team_id is None:
        return True
    return isinstance(viewer, Caller) and viewer.sees_current(current)


def cached_leaderboard(
    db: Session, slug: str, viewer: Viewer, contest: Contest | None = None
) -> Board:
    """The board of `contest` (None: the current one) as `viewer` sees it, from this
    process's cache while the database's board counter and the version are unchanged:
    one query (board.snapshot), none while api.reads.readcache holds the snapshot."""
    contest = contest if contest is not None else contests.current(db)
    if contests.started(contest):  # kept only once started, as api.pages.problem's
        state = readcache.snapshot(db, slug, contest=None if contest.is_current else contest.id)
    else:
        state = board.snapshot(db, slug, contest=contest.id)
    if state.version_id is None or state.contest_id != contest.id:
        current_version(db, slug, contest)  # says why: no such problem in it
        state = board.snapshot(db, slug, contest=contest.id)  # made current meanwhile
    key = _key(db, state, viewer)
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return found
    made = single_flight.shared(("board", key), lambda: _made(db, slug, viewer, contest))
    with _lock:
        _cache[key] = made
        while len(_cache) > CACHED_BOARDS:
            _cache.popitem(last=False)
    return made


def _made(db: Session, slug: str, viewer: Viewer, contest: Contest) -> Board:
    body = leaderboard(db, slug, viewer, contest)
    encoded = json.dumps(body, separators=(",", ":")).encode()
    return Board(_etag(encoded), body, encoded)


def _etag(encoded: bytes) -> str:
    """Of the answer itself: the cache key's board counter moves with every team's
    judging, which a frozen board hides (and with hidden scores before the reveal)."""
    return f'"lb-{hashlib.sha256(encoded).hexdigest()[:24]}"'


def _key(db: Session, state: board.Snapshot, viewer: Viewer) -> tuple[Hashable, str]:
    """(the database, the board's version, counter and viewer class). By database too:
    one process may serve apps on several (tests, an operator's second instance), whose
    version ids and counters coincide."""
    return _key_at(readcache.database(db), state, viewer)


def _key_at(database: Hashable, state: board.Snapshot, viewer: Viewer) -> tuple[Hashable, str]:
    cls = _viewer_class(state.frozen, viewer)
    return database, f'"lb-{state.contest_id}-{state.version_id}-{state.counter}-{cls}"'


def _viewer_class(frozen: bool, viewer: Viewer) -> str:
    """Viewers who see the same board: organizers; while a freeze is set, each team (its
    own newer submissions stay on its board); else every contestant and visitor."""
    if viewer is not None and viewer.is_admin:
        return "admin"
    if frozen:
        return f"team{viewer.team_id if viewer and viewer.team_id else 0}"
    return "all"


def leaderboard(
    db: Session, slug: str, viewer: Viewer, contest: Contest | None = None
) -> dict[str, Any]:
    """`contest`'s board of `slug` (None: the current contest's)."""
    contest = contest if contest is not None else contests.current(db)
    version = current_version(db, slug, contest)
    admin = bool(viewer and viewer.is_admin)
    revealed = hidden_visible(db, viewer, contest)  # as a submission's hidden cases
    freeze = contest.freeze_at if contest.freeze_at else None
    query = (
        select(Submission)
        .join(Team, Team.id == Submission.team_id)
        # The baselines' own team is shown apart, never ranked.
        .where(*on_the_board(version.id, contest_id=contest.id))
        .where(Submission.public_score.is_not(None))
        .options(joinedload(Submission.team))  # the rows' team names: no query per team
    )
    key = "hidden_score" if revealed and contest.hidden_revealed else "public_score"
    finals = key == "hidden_score" and contest.hidden_judging == "final"
    better = _finals_first if finals else _public_first  # before the reveal: public only
    best: dict[int, Submission] = {}
    for sub in db.scalars(query):
        own = viewer is not None and viewer.team_id == sub.team_id
        if freeze and not admin and not own and aware(sub.created_at) >= aware(freeze):
            continue
        seen = best.get(sub.team_id)
        if seen is None or better(sub) > better(seen):
            best[sub.team_id] = sub
    rows = sorted(best.values(), key=lambda s: (-(getattr(s, key) or 0.0), s.id))
    return {
        "contest": contest.slug,
        "problem": slug,
        "version": version.number,
        "frozen": bool(freeze) and not admin,
        "hidden_revealed": contest.hidden_revealed,
        "ranked_by": key,
        "rows": [_row(i + 1, s, revealed) for i, s in enumerate(rows)],
        "baselines": baselines.rows(db, version.id, revealed, contest),
    }


def _public_first(sub: Submission) -> tuple:
    """A team's row: its best public submission (the earliest of equals)."""
    return (sub.public_score, -sub.id)


def _finals_first(sub: Submission) -> tuple:
    """With hidden cases judged only at the end (api.actions.finals), a team's row is its best
    finally judged submission, else its best public one."""
    judged = sub.final_pick and sub.hidden_score is not None  # not a score of another mode
    return (judged, sub.hidden_score if judged else 0.0, sub.public_score, -sub.id)


def _row(rank: int, sub: Submission, revealed: bool) -> dict[str, Any]:
    return {
        "rank": rank,
        "team": sub.team.name,
        "public_score": sub.public_score,
        "hidden_score": sub.hidden_score if revealed else None,
        "submission_id": sub.id,
        "submitted_at": aware(sub.created_at).isoformat(),
    }
