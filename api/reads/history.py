"""Each problem's score history: every team's best score after each improvement on the
current version, as the board would have shown it then, for the chart
(judge.pictures.history). The same rules as the board: disqualified and system teams
are left out; after a freeze other teams' newer submissions stay hidden from
contestants; hidden scores only for whoever may see them (api.actions.submissions)."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.actions import baselines
from api.actions.problems import current_version
from api.actions.submissions import on_the_board
from api.db import board
from api.db.models import Contest, Submission, Team, User, aware, utcnow
from api.reads.hidden import hidden_visible
from judge.pictures.history import Reference, Series, history_svg

TOP_TEAMS = 5  # and the viewer's own team
CACHED_CHARTS = 512  # per process
_cache: OrderedDict[tuple, str] = OrderedDict()
_lock = threading.Lock()


@dataclass(frozen=True)
class Chart:
    score: str  # "public_score" | "hidden_score"
    svg: str


def charts(db: Session, slug: str, viewer: User | None, contest: Contest) -> list[Chart]:
    """The public chart, and the hidden one for whoever may see hidden scores."""
    hidden = ["hidden_score"] if hidden_visible(db, viewer, contest) else []
    return [
        Chart(key, cached_svg(db, slug, viewer, key, contest)) for key in ["public_score", *hidden]
    ]


def cached_svg(db: Session, slug: str, viewer: User | None, score: str, contest: Contest) -> str:
    """chart_svg, drawn once per board change, viewer class and minute (the time axis
    ends now) in this process: a board page reloaded all contest long costs one query."""
    state = board.snapshot(db, slug, contest=contest.id)
    who = "admin" if viewer and viewer.is_admin else f"team{viewer.team_id if viewer else 0}"
    key = (str(db.get_bind().url), contest.id, state.version_id, state.counter, who, score,
           int(time.time() // 60))  # fmt: skip
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return found
    svg = chart_svg(db, slug, viewer, score, contest)
    with _lock:
        _cache[key] = svg
        while len(_cache) > CACHED_CHARTS:
            _cache.popitem(last=False)
    return svg


def chart_svg(db: Session, slug: str, viewer: User | None, score: str, contest: Contest) -> str:
    if score == "hidden_score" and not hidden_visible(db, viewer, contest):
        raise ValueError("hidden scores are not the viewer's to see")
    version = current_version(db, slug, contest)
    own = viewer.team_id if viewer else None
    lines = team_lines(db, version.id, viewer, score, contest)
    best_last = sorted(lines, key=lambda t: -lines[t][1][-1][1])
    chosen = best_last[:TOP_TEAMS] + [t for t in best_last[TOP_TEAMS:] if t == own]
    series = [Series(lines[t][0], tuple(lines[t][1]), own=t == own) for t in chosen]
    refs = [
        Reference(r["label"], r[score])
        for r in baselines.rows(db, version.id, hidden_visible(db, viewer, contest), contest)
        if r[score] is not None
    ]
    start = aware(contest.start_at) if contest.start_at else None
    end = utcnow()
    if contest.end_at and aware(contest.end_at) < end:
        end = aware(contest.end_at)
    which = "hidden" if score == "hidden_score" else "public"
    return history_svg(f"{slug}: best {which} score over time", series, refs, start, end)


def team_lines(
    db: Session, version_id: int, viewer: User | None, score: str, contest: Contest
) -> dict[int, tuple[str, list[tuple[datetime, float]]]]:
    """{team id: (name, [(time, the board's score for the team from then on)])}: a point
    whenever the team's best public submission changes (the board ranks by it), in
    `contest`."""
    admin = bool(viewer and viewer.is_admin)
    freeze = aware(contest.freeze_at) if contest.freeze_at else None
    query = (
        select(
            Submission.team_id,
            Team.name,
            Submission.id,
            Submission.created_at,
            Submission.public_score,
            Submission.hidden_score,
        )
        .join(Team, Team.id == Submission.team_id)
        .where(*on_the_board(version_id, contest_id=contest.id))
        .where(Submission.public_score.is_not(None))
        .order_by(Submission.created_at, Submission.id)
    )
    best: dict[int, tuple[float, int, float | None]] = {}
    lines: dict[int, tuple[str, list[tuple[datetime, float]]]] = {}
    for team_id, name, sub_id, created, public, hidden in db.execute(query):
        at = aware(created)
        mine = viewer is not None and viewer.team_id == team_id
        if freeze and not admin and not mine and at >= freeze:
            continue
        seen = best.get(team_id)
        if seen is not None and (public, -sub_id) <= (seen[0], -seen[1]):
            continue
        best[team_id] = (public, sub_id, hidden)
        value = public if score == "public_score" else hidden
        points = lines.setdefault(team_id, (name, []))[1]
        if value is not None and (not points or points[-1][1] != value):
            points.append((at, float(value)))
    return {t: line for t, line in lines.items() if line[1]}
