"""The problem page's main part (statement and cases), rendered once per process for
each problem version, set of case weights and viewer class (whether
hidden cases' figures show; whether the viewer is signed in). A request then costs one
query (api.db.board.snapshot; none while api.reads.readcache holds it) and the page's frame."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable

from markupsafe import Markup
from sqlalchemy.orm import Session

from api.access.caller import Caller
from api.actions import contests, problems
from api.db import board
from api.db.models import Contest, ProblemVersion, User
from api.pages.common import _markdown, templates
from api.reads import hidden, readcache
from api.reads.leaderboard import means_current

CACHED_PAGES = 256  # per process: problems x versions x 4 viewer classes
CACHED_FRAMES = 4096  # whole pages (known_page): main parts x the viewers who read them
_cache: OrderedDict[tuple, tuple[str, Markup]] = OrderedDict()
_pages: OrderedDict[tuple, bytes] = OrderedDict()
_lock = threading.Lock()
Viewer = User | Caller | None
Main = tuple[str, Markup]  # the page's title, its main part


def known_main(db: Session, slug: str, viewer: Viewer) -> tuple[str, Markup] | None:
    """problem_main from this process's caches alone (no I/O), or None."""
    found = known_main_at(readcache.database(db), slug, viewer)
    return found[1] if found else None


def known_main_at(db_key: Hashable, slug: str, viewer: Viewer) -> tuple[tuple, Main] | None:
    """known_main by the database's key (readcache.database()), with its cache key: the
    current contest's page, for a viewer whose contest it is (known without I/O)."""
    state = readcache.known_snapshot_at(db_key, slug, weights=True)
    if state is None or state.version_id is None or state.contest_id is None:
        return None
    if not means_current(viewer, state.contest_id):
        return None
    key = _key(db_key, state, viewer)
    with _lock:
        found = _cache.get(key)
    return (key, found) if found else None


def known_page(db_key: Hashable, slug: str, viewer: Caller | None) -> bytes | None:
    """The whole page as the route renders it for a token's holder or nobody (no CSRF
    token, no flash), from this process's caches alone, or None. The CSP nonce is only
    in the headers, so the bytes are the same for every request of that viewer."""
    found = known_main_at(db_key, slug, viewer)
    if found is None:
        return None
    (main_key, (title, main)) = found
    who = viewer and (viewer.id, viewer.username, viewer.team, viewer.is_admin)
    key = (main_key, who)
    with _lock:
        page = _pages.get(key)
    if page is None:
        page = (
            templates.env.get_template("problem.html")
            .render(
                user=viewer,
                by_token=True,
                nonce="",
                flash=None,
                error=None,
                bare=False,
                title=title,
                body=main,
            )
            .encode()
        )
        with _lock:
            _pages[key] = page
            while len(_pages) > CACHED_FRAMES:
                _pages.popitem(last=False)
    return page


def problem_main(db: Session, slug: str, viewer: Viewer, contest: Contest) -> tuple[str, Markup]:
    """(the page's title, its main part) of `contest`'s version as `viewer` sees them."""
    # Kept (for known_main, the hot path's) only once the contest started: an organizer
    # reads it before, and what is kept is served to anyone, without the start's check.
    if contests.started(contest):
        state = readcache.snapshot(db, slug, True, None if contest.is_current else contest.id)
    else:
        state = board.snapshot(db, slug, True, contest.id)
    if state.version_id is None or state.contest_id != contest.id:
        problems.current_version(db, slug, contest)  # says why: no such problem in it
        state = board.snapshot(db, slug, True, contest.id)  # made current meanwhile
    key = _key(readcache.database(db), state, viewer)
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return found
    version = db.get(ProblemVersion, state.version_id)
    assert version is not None
    statement = Markup(_markdown.render(version.statement))  # raw HTML disabled
    main = templates.env.get_template("_problem.html").render(
        version=version,
        statement=statement,
        user=viewer is not None,
        hidden=hidden.sees_hidden(viewer, state.revealed),
    )
    made = (version.name, Markup(main))
    with _lock:
        _cache[key] = made
        while len(_cache) > CACHED_PAGES:
            _cache.popitem(last=False)
    return made


def _key(db_key: Hashable, state: board.Snapshot, viewer: Viewer) -> tuple:
    """What the page shows: the version (its statement and cases), the weights, a hidden
    case's figures or not. Not the board's counter: it moved with every judging's end,
    and every viewer's page was rendered again (on the hot path's event loop)."""
    whole = hidden.sees_hidden(viewer, state.revealed)  # a hidden case's figures
    return (db_key, state.contest_id, state.version_id, state.weights, whole, viewer is not None)
