"""The clarifications page (api.actions.messages): the jury's announcements and the questions
a viewer may read; a team member asks there, an organizer answers and announces."""

from __future__ import annotations

from functools import partial
from typing import Annotated
from urllib.parse import quote

from fastapi import Form, Request
from fastapi.responses import Response
from sqlalchemy.orm import Session

from api.access.deps import DB, Admin, Contestant
from api.actions import contests, messages, problems
from api.db.models import Contest, User
from api.pages.common import page_contest, render, router
from api.pages.organizer import _act

PAGE = "/clarifications"


def _page(
    request: Request, db: Session, user: User, status: int = 200, error: str = ""
) -> Response:
    contest = page_contest(request, db, user)
    return render(
        request,
        "clarifications.html",
        user,
        status,
        contest=contest,
        announcements=messages.visible(db, user, "announcement", contest=contest),
        questions=messages.visible(db, user, "clarification", contest=contest),
        problems=problems.shown_in(db, contest, user),
        error=error or None,
    )


def _chosen(request: Request, db: Session, user: User, contest: str) -> Contest:
    """The contest of the page the form was on (its hidden field), not the session's:
    another tab may have chosen another contest since."""
    if contest.strip():
        return contests.resolve(db, user, contest.strip()[:64])
    return page_contest(request, db, user)


@router.get(PAGE)
def clarifications_page(request: Request, user: Contestant, db: DB) -> Response:
    return _page(request, db, user)


@router.post(PAGE)
def ask_page(
    request: Request,
    user: Contestant,
    db: DB,
    question: Annotated[str, Form()] = "",
    problem: Annotated[str, Form()] = "",
    contest: Annotated[str, Form()] = "",
) -> Response:
    def act() -> str:
        asked = messages.ask(db, user, question, problem, _chosen(request, db, user, contest))
        return f"question #{asked['id']} sent to the jury"

    return _act(request, db, _back(contest), act, partial(_page, request, db, user))


def _back(contest: str) -> str:
    """The page of the form's contest (the session's may be another tab's choice)."""
    slug = contest.strip()[:64]
    return f"{PAGE}?contest={quote(slug, safe='')}" if slug else PAGE


@router.post(PAGE + "/{message_id}/answer")
def answer_page(
    request: Request,
    message_id: int,
    user: Admin,
    db: DB,
    answer: Annotated[str, Form()] = "",
    audience: Annotated[str, Form()] = "team",
) -> Response:
    def act() -> str:
        done = messages.answer(db, user, message_id, answer, audience)
        return f"question #{done['id']} answered to {done['audience']}"

    return _act(request, db, PAGE, act, partial(_page, request, db, user))


@router.post("/announcements")
def announce_page(
    request: Request,
    user: Admin,
    db: DB,
    text: Annotated[str, Form()] = "",
    problem: Annotated[str, Form()] = "",
    contest: Annotated[str, Form()] = "",
) -> Response:
    def act() -> str:
        made = messages.announce(db, user, text, problem, _chosen(request, db, user, contest))
        return f"announcement #{made['id']} sent"

    return _act(request, db, _back(contest), act, partial(_page, request, db, user))
