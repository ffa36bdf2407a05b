"""The problem page's main part (statement and cases), rendered once per process for
each problem version, board counter, set of case weights and viewer class (whether
hidden cases' figures show; whether the viewer is signed in). A request then costs one
query (api.db.board.snapshot; none while api.readcache holds it) and the page's frame."""

from __future__ import annotations

import threading
from collections import OrderedDict

from markupsafe import Markup
from sqlalchemy.orm import Session

from api import problems, readcache, submissions
from api.caller import Caller
from api.db import board
from api.db.models import ProblemVersion, User
from api.pages.common import _markdown, templates

CACHED_PAGES = 256  # per process: problems x versions x 4 viewer classes
_cache: OrderedDict[tuple, tuple[str, Markup]] = OrderedDict()
_lock = threading.Lock()
Viewer = User | Caller | None


def known_main(db: Session, slug: str, viewer: Viewer) -> tuple[str, Markup] | None:
    """problem_main from this process's caches alone (no I/O), or None."""
    state = readcache.known_snapshot(db, slug, weights=True)
    if state is None or state.version_id is None:
        return None
    with _lock:
        return _cache.get(_key(db, state, viewer))


def problem_main(db: Session, slug: str, viewer: Viewer) -> tuple[str, Markup]:
    """(the page's title, its main part) as `viewer` sees them."""
    state = readcache.snapshot(db, slug, weights=True)
    if state.version_id is None:
        problems.current_version(db, slug)  # says why: no such problem
    key = _key(db, state, viewer)
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
        hidden=submissions.sees_hidden(viewer, state.revealed),
    )
    made = (version.name, Markup(main))
    with _lock:
        _cache[key] = made
        while len(_cache) > CACHED_PAGES:
            _cache.popitem(last=False)
    return made


def _key(db: Session, state: board.Snapshot, viewer: Viewer) -> tuple:
    hidden = submissions.sees_hidden(viewer, state.revealed)  # a hidden case's figures
    return (readcache.database(db), state.version_id, state.counter, state.weights, hidden,
            viewer is not None)  # fmt: skip
