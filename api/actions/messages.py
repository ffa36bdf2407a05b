"""Clarifications and announcements. A team asks about a problem or in general; the
jury (organizers) answers the asking team alone or everyone; the jury announces to
everyone. A team sees the announcements, the questions answered to everyone, and its
own questions; never another team's private one. Organizers see everything. Every
question, answer and announcement is in the audit log."""

from __future__ import annotations

from typing import Any

from sqlalchemy import false, func, or_, select
from sqlalchemy.orm import Session

from api import news
from api.actions import audit, contests
from api.db.models import Contest, Message, Problem, User, utcnow
from api.errors import Forbidden, NotFound, ServiceError, TooMany

MAX_TEXT = 4000  # characters of a question, an answer or an announcement
OPEN_PER_TEAM = 20  # unanswered questions a team may have at once
AUDIENCES = ("team", "all")
# An export's columns (api.reads.exports); "team" is filled for organizers only.
COLUMNS = ("id", "kind", "team", "problem", "text", "answer", "audience", "created_at",
           "answered_at")  # fmt: skip


def _text(value: str, what: str) -> str:
    text = value.strip()
    if not text:
        raise ServiceError(f"the {what} is empty")
    if len(text) > MAX_TEXT:
        raise ServiceError(f"the {what} has {len(text)} characters; at most {MAX_TEXT}")
    return text


def _problem_in(db: Session, contest: Contest, problem: str, jury: bool = False) -> None:
    """Before the contest's start its problems are the organizers' only: a team's
    question names none of them (a 404 would tell which slugs are in it)."""
    found = db.scalar(select(Problem).where(Problem.slug == problem)) if problem else None
    hidden = not jury and not contests.started(contest)
    if problem and (hidden or found is None or contests.pinned_version(db, contest, found) is None):
        raise NotFound(f"no problem {problem!r} in contest '{contest.slug}'")


def ask(
    db: Session, user: User, question: str, problem: str = "", contest: Contest | None = None
) -> dict[str, Any]:
    """A question of `user`'s team in `contest` (None: the team's, contests.resolve),
    about `problem` (a slug) or in general ("")."""
    if user.team_id is None:
        raise Forbidden("only a team's member can ask the jury; organizers announce")
    text = _text(question, "question")
    contest = contest if contest is not None else contests.resolve(db, user)
    if contest.id not in contests.registered(db, user.team_id):
        raise Forbidden(f"your team is not registered in contest '{contest.slug}'")
    _problem_in(db, contest, problem)
    waiting = db.scalar(
        select(func.count(Message.id)).where(
            Message.team_id == user.team_id, Message.kind == "clarification",
            Message.answered_at.is_(None),
        )
    )  # fmt: skip
    if (waiting or 0) >= OPEN_PER_TEAM:
        raise TooMany(
            f"your team has {waiting} questions waiting for the jury, the most it may have; "
            "ask again once one is answered"
        )
    row = Message(kind="clarification", team_id=user.team_id, author_id=user.id,
                  problem=problem, text=text, contest_id=contest.id)  # fmt: skip
    db.add(row)
    db.flush()
    audit.record(db, user, "clarification_asked", f"message {row.id}", {"problem": problem},
                 contest=contest.id)  # fmt: skip
    _news(db)
    return message_dict(row, organizer=False)


def answer(db: Session, jury: User, message_id: int, text: str, audience: str) -> dict[str, Any]:
    """The jury's answer to the asking team ("team") or to everyone ("all"); a second
    answer replaces the first (a correction), said in the audit log."""
    if audience not in AUDIENCES:
        raise ServiceError(f"audience is one of {', '.join(AUDIENCES)}, not {audience!r}")
    row = db.get(Message, message_id, with_for_update=True)
    if row is None or row.kind != "clarification":
        raise NotFound(f"no question {message_id}")
    corrected = row.answered_at is not None
    row.answer, row.audience = _text(text, "answer"), audience
    row.answered_by, row.answered_at = jury.id, utcnow()
    detail = {"audience": audience, "corrected": corrected}
    audit.record(db, jury, "clarification_answered", f"message {row.id}", detail, row.contest_id)
    _news(db)
    return message_dict(row, organizer=True)


def announce(
    db: Session, jury: User, text: str, problem: str = "", contest: Contest | None = None
) -> dict[str, Any]:
    """To every team of `contest` (None: the current contest)."""
    contest = contest if contest is not None else contests.current(db)
    _problem_in(db, contest, problem, jury=True)
    row = Message(kind="announcement", author_id=jury.id, problem=problem, contest_id=contest.id,
                  text=_text(text, "announcement"), audience="all")  # fmt: skip
    db.add(row)
    db.flush()
    audit.record(db, jury, "announcement", f"message {row.id}", {"problem": problem},
                 contest=contest.id)  # fmt: skip
    _news(db)
    return message_dict(row, organizer=True)


def _news(db: Session) -> None:
    """Every API process's open pages hear of it once this commits (api.live.message_feed)."""
    news.after_commit(db, news.News(0, messages=True, origin=news.ORIGIN))


def may_read(organizer: bool, team_id: int | None, row_team: int | None, audience: str) -> bool:
    """visible()'s rule for one message (the live feed's filter)."""
    return organizer or audience == "all" or (team_id is not None and row_team == team_id)


def visible(
    db: Session,
    user: User,
    kind: str | None = None,
    limit: int = 500,
    contest: Contest | None = None,
) -> list[dict[str, Any]]:
    """What `user` may read of `contest` (None: the user's, contests.resolve), newest
    first: everything for organizers; for a team, the announcements, the answers to all
    and its own questions."""
    contest = contest if contest is not None else contests.resolve(db, user)
    query = select(Message).where(Message.contest_id == contest.id)
    if kind:
        query = query.where(Message.kind == kind)
    if not user.is_admin:
        mine = Message.team_id == user.team_id if user.team_id is not None else false()
        query = query.where(or_(Message.audience == "all", mine))
    rows = db.scalars(query.order_by(Message.id.desc()).limit(limit)).all()
    return [message_dict(r, organizer=user.is_admin) for r in rows]


def message_dict(row: Message, organizer: bool) -> dict[str, Any]:
    """A message as its reader sees it: the asking team's name only for organizers
    (others see that a team asked, not which)."""
    data: dict[str, Any] = {
        "id": row.id,
        "contest_id": row.contest_id,
        "kind": row.kind,
        "problem": row.problem or None,
        "text": row.text,
        "answer": row.answer or None,
        "audience": row.audience,
        "created_at": row.created_at.isoformat() if row.created_at else None,
        "answered_at": row.answered_at.isoformat() if row.answered_at else None,
    }
    if organizer and row.kind == "clarification":
        data["team"] = row.team.name if row.team else None
    return data
