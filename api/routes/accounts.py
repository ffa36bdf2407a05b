"""Accounts made by their owners and kept by organizers (api.access.signup): sign-up, a team's
invitation code, and the organizers' approve, lock and password reset."""

from __future__ import annotations

from functools import partial
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import Field

from api.access import signup
from api.access.deps import DB, Admin, Config, Contestant, client_address
from api.access.login import hash_slot
from api.routes.admin import Body

router = APIRouter(prefix="/api/v1", tags=["accounts"])


class SignUpIn(Body):
    username: str = Field(max_length=100)
    password: str = Field(max_length=1024)
    team: str = Field(default="", max_length=100)  # a new team's name
    invite: str = Field(default="", max_length=100)  # or a team's invitation code
    contest: str = Field(default="", max_length=64)  # a new team's contest ("": current)


class LockIn(Body):
    locked: bool = True


class PasswordIn(Body):
    password: str = Field(max_length=1024)


@router.post("/signup", status_code=201)
async def sign_up(body: SignUpIn, request: Request, settings: Config, db: DB) -> dict[str, Any]:
    """An account of your own, where the contest allows it: in a new team (`team`) or in
    a team whose invitation code you were given (`invite`). With approval, an organizer
    approves the account before it can log in. A few per address and hour."""
    address = client_address(request)
    admit = partial(signup.admit, settings, address)  # its own commit, before the hash
    contest = (body.contest or request.query_params.get("contest", ""))[:64] or None
    async with hash_slot(request.app, settings):  # the password's hash: as a login's
        return await run_in_threadpool(
            signup.sign_up, db, body.username, body.password, body.team, body.invite, admit,
            contest,
        )  # fmt: skip


@router.get("/signup/contests")
def joinable(db: DB) -> list[dict[str, Any]]:
    """The contests one may sign up for, or enter with one's team."""
    return [{"slug": c.slug, "title": c.title, "signup": c.signup}
            for c in signup.joinable_contests(db)]  # fmt: skip


@router.post("/contests/{ref}/entry", status_code=201)
def enter_contest(ref: str, user: Contestant, db: DB) -> dict[str, Any]:
    """Your team enters the contest: at once where its sign-up is open, else pending
    an organizer's approval."""
    return signup.enter(db, user, ref)


@router.post("/team/invite", status_code=201)
def new_invite(user: Contestant, db: DB) -> dict[str, Any]:
    """A new invitation code for your team (the previous one stops working)."""
    return signup.invite(db, user)


@router.get("/admin/users/pending")
def pending_users(user: Admin, db: DB) -> list[dict[str, Any]]:
    return signup.pending(db)


@router.post("/admin/users/{username}/approve")
def approve(username: str, user: Admin, db: DB) -> dict[str, Any]:
    return signup.approve(db, user, username)


@router.post("/admin/users/{username}/lock")
def lock(username: str, body: LockIn, user: Admin, db: DB) -> dict[str, Any]:
    """Lock (`locked`: true; its tokens are revoked, its sessions end) or unlock."""
    return signup.lock(db, user, username, body.locked)


@router.post("/admin/users/{username}/password")
def reset_password(username: str, body: PasswordIn, user: Admin, db: DB) -> dict[str, Any]:
    """A new password (told to its owner by you); the account's web sessions end."""
    return signup.reset_password(db, user, username, body.password)
