"""Accounts made by their owners (issue 37): the contest's sign-up mode says whether
anyone may sign up ("open"), anyone may with an organizer's approval ("approval"), or
only organizers make accounts ("closed", the default). A new account makes a team,
whose invitation code its teammates give to join (at most the contest's team size), or
joins one by its code. Sign-ups are counted per address, in their own transaction before
the password's hash, so a bot gets a 429 after a few, not thousands of accounts.

Organizers approve pending accounts, lock and unlock accounts (a lock revokes the
account's tokens and ends its web sessions) and reset passwords. Every action is in the
audit log.
"""

from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Callable
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from api.access.auth import hash_password, revoke_access, token_hash, user_named
from api.access.login import KEY_LENGTH, count_attempt
from api.actions import admin, contests
from api.actions.audit import record
from api.db.models import Contest, Team, User, utcnow
from api.db.session import session_scope
from api.errors import Conflict, Forbidden, NotFound, ServiceError, TooMany
from api.settings import Settings


def admit(settings: Settings, address: str) -> None:
    """Counts a sign-up from `address` (committed at once, whatever follows); 429 past
    the most an address may make in the login window."""
    with session_scope(settings.database_url) as db:
        key = f"signup:{counted_as(address)}"[:KEY_LENGTH]
        count, _ = count_attempt(db, key, settings.login_window_s)
    if count > settings.signups_per_address:
        hours = settings.login_window_s / 3600
        raise TooMany(
            f"{settings.signups_per_address} accounts were made from this address in the last "
            f"{hours:g} h, the most allowed; try again later or ask the organizers"
        )


def counted_as(address: str) -> str:
    """An IPv6 address counts as its /64 (one host holds a whole /64 to pick from);
    anything else as itself."""
    try:
        found = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(found, ipaddress.IPv6Address):
        if found.ipv4_mapped is not None:
            return str(found.ipv4_mapped)
        return str(ipaddress.ip_network(f"{found}/64", strict=False))
    return str(found)


def sign_up(
    db: Session,
    username: str,
    password: str,
    team: str,
    invite: str,
    admit: Callable[[], None],
    contest_ref: str | None = None,
) -> dict[str, Any]:
    """A new account in a new team (`team`, a name; registered in the contest
    `contest_ref` names, else the current one) or in the team whose code is `invite`.
    `admit` (the per-address count) runs once the request is known to be good, just
    before the password's hash: a refused request counts nothing."""
    joining = bool(invite.strip())
    if joining and not joinable_contests(db):
        raise Forbidden("sign-up is closed: the organizers make the accounts")
    contest = None if joining else joinable(db, contest_ref)
    if not password:
        raise ServiceError("a password has at least 8 characters")
    if bool(team.strip()) == bool(invite.strip()):
        raise ServiceError("give a team name to make a team, or a team's invitation code to join")
    admin.check_name(username.strip(), "a username", path=True)
    admin.check_name(team.strip(), "a team name", path=False)
    if len(password) < 8:
        raise ServiceError("a password has at least 8 characters")
    if user_named(db, username.strip()) is not None:
        raise Conflict(f"user '{username.strip()}' exists already")
    code = None
    try:
        if joining:
            joined = _team_of_code(db, invite.strip())
            admit()
        else:
            assert contest is not None
            if db.scalar(select(Team.id).where(Team.name == team.strip())) is not None:
                raise Conflict(f"team '{team.strip()}' exists already")
            admit()
            joined = admin.create_team(db, team, None, contest)
            code = new_code(joined)
        user = admin.create_user(db, username, password, joined.name, False, None)
    except IntegrityError:  # a parallel sign-up took the name between the check and ours
        raise Conflict("this username or team name was just taken; choose another") from None
    # Counted again after our row: parallel joins each counted before the other's insert.
    mode, most = binding(db, joined) if joining else (contest.signup, contest.team_size)  # type: ignore[union-attr]
    if joining and _members(db, joined.id) > most:
        raise Conflict(f"team '{joined.name}' is full: {most} members, the most a team may have")
    user.pending = mode == "approval"
    record(db, user, "sign_up", username, {"team": joined.name, "pending": user.pending})
    return {"username": user.username, "team": joined.name, "pending": user.pending,
            "invite_code": code, "detail": _welcome(user.pending, code)}  # fmt: skip


def binding(db: Session, team: Team) -> tuple[str, int]:
    """The sign-up mode and team size a new member of `team` meets: the strictest of
    the team's contests' (closed before approval before open; the smallest size), so
    that joining by code never skips an approval one of them asks for."""
    ids = contests.registered(db, team.id) + contests.registered(db, team.id, "pending")
    rows = [c for c in (contests.held(db, i) for i in ids) if c is not None]
    rows = rows or [contests.current(db)]
    modes = {c.signup for c in rows}
    mode = "closed" if "closed" in modes else "approval" if "approval" in modes else "open"
    return mode, min(c.team_size for c in rows)


def joinable(db: Session, ref: str | None) -> Contest:
    """The contest `ref` names (None: the current one) if it lets people sign up."""
    contest = contests.find(db, ref) if ref else contests.current(db)
    if contest is None:
        raise NotFound(f"no contest '{(ref or '')[:64]}'")
    if contest.signup not in ("open", "approval"):
        raise Forbidden("sign-up is closed: the organizers make the accounts")
    return contest


def joinable_contests(db: Session) -> list[Contest]:
    """The contests anyone may sign up for or enter (their titles are public)."""
    query = select(Contest).where(Contest.signup.in_(("open", "approval"))).order_by(Contest.id)
    return list(db.scalars(query))


def enter(db: Session, user: User, ref: str) -> dict[str, Any]:
    """`user`'s team asks to enter the contest `ref`: registered at once where its
    sign-up is open, pending an organizer's approval where it needs approval."""
    if user.team is None or user.team.system:
        raise Forbidden("only a team's member enters a contest for the team")
    # A closed contest the team may not see answers as one that does not exist (no
    # probing of names); an open one's title is public (joinable_contests).
    found = contests.find(db, ref)
    closed = found is not None and found.signup not in ("open", "approval")
    if found is not None and closed and not contests.may_see(db, user, found):
        raise NotFound(f"no contest '{ref[:64]}'")
    contest = joinable(db, ref)
    for status in ("approved", "pending"):
        if contest.id in contests.registered(db, user.team_id, status):
            raise Conflict(f"team '{user.team.name}' is in contest '{contest.slug}' ({status})")
    status = "pending" if contest.signup == "approval" else "approved"
    contests.register(db, contest, user.team.id, status)
    record(db, user, "enter_contest", f"contest {contest.slug}: {user.team.name}",
           {"status": status}, contest.id)  # fmt: skip
    return {"contest": contest.slug, "team": user.team.name, "status": status}


def _team_of_code(db: Session, code: str) -> Team:
    # Locked (PostgreSQL) so that parallel joins count one after the other; SQLite has
    # one writer, and sign_up counts again after its insert.
    found = select(Team).where(Team.invite_hash == token_hash(code)).with_for_update()
    team = db.scalar(found)
    if team is None or team.system or team.disqualified:
        raise NotFound("no team has this invitation code")
    mode, size = binding(db, team)
    if mode == "closed":
        raise Forbidden(f"team '{team.name}' is in a contest whose organizers make the accounts")
    members = _members(db, team.id)
    if members >= size:
        raise Conflict(f"team '{team.name}' is full: {members} members, the most a team may have")
    return team


def _members(db: Session, team_id: int) -> int:
    return db.scalar(select(func.count(User.id)).where(User.team_id == team_id)) or 0


def _welcome(pending: bool, code: str | None) -> str:
    said = ["your account waits for an organizer's approval" if pending else "you may log in"]
    if code:
        said.append(f"your teammates join with the invitation code {code} (shown once)")
    return "; ".join(said)


def new_code(team: Team) -> str:
    """A new invitation code for `team` (the old one stops working); only its hash is kept."""
    code = secrets.token_urlsafe(12)
    team.invite_hash = token_hash(code)
    return code


def invite(db: Session, user: User) -> dict[str, Any]:
    """A member's new invitation code for the member's team."""
    if user.team is None or user.team.system:
        raise Forbidden("only a team's member has an invitation code to give")
    code = new_code(user.team)
    record(db, user, "new_invite_code", user.team.name)
    return {"team": user.team.name, "invite_code": code}


def _account(db: Session, username: str) -> User:
    user = user_named(db, username)
    if user is None:
        raise NotFound(f"no user '{username}'")
    return user


def approve(db: Session, actor: User, username: str) -> dict[str, Any]:
    user = _account(db, username)
    user.pending = False
    record(db, actor, "approve_user", username)
    return account_dict(user)


def lock(db: Session, actor: User, username: str, locked: bool) -> dict[str, Any]:
    """Lock (its tokens revoked, its sessions ended) or unlock an account."""
    user = _account(db, username)
    if user.id == actor.id:
        raise Conflict("an organizer cannot lock their own account")
    if locked and user.locked_at is None:
        user.locked_at = utcnow()
        revoke_access(db, user)
    elif not locked:
        user.locked_at = None
    record(db, actor, "lock_user" if locked else "unlock_user", username)
    return account_dict(user)


def reset_password(db: Session, actor: User, username: str, password: str) -> dict[str, Any]:
    """A new password; the account's web sessions end (its tokens stay)."""
    if len(password) < 8:
        raise ServiceError("a password has at least 8 characters")
    user = _account(db, username)
    user.password_hash = hash_password(password)
    revoke_access(db, user, tokens=False)
    record(db, actor, "reset_password", username)
    return account_dict(user)


def pending(db: Session) -> list[dict[str, Any]]:
    rows = db.scalars(select(User).where(User.pending.is_(True)).order_by(User.id)).all()
    return [account_dict(u) for u in rows]


def account_dict(user: User) -> dict[str, Any]:
    return {"username": user.username, "team": user.team.name if user.team else None,
            "pending": user.pending, "locked": user.locked_at is not None}  # fmt: skip
