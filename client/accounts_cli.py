"""Accounts on the command line (api.access.signup): sign up where the contest allows it, make
a new invitation code for your team; organizers list pending accounts, approve, lock,
unlock and reset passwords. Passwords are asked for (hidden), or read from
MEMORACE_PASSWORD, never taken as an argument (it would stay in the shell's history)."""

from __future__ import annotations

import json
import os
from typing import Annotated, Any

import typer

from client.server import connect, server_errors
from judge.console import fail, new_table, out, show

app = typer.Typer()
SERVER = "Server (MEMORACE_URL, MEMORACE_TOKEN or ~/.config/memorace/config.toml)"
JSON = typer.Option("--json", help="JSON")
USER = typer.Argument(help="the account's username")


def _password(what: str) -> str:
    given = os.environ.get("MEMORACE_PASSWORD")
    if given is not None:
        return given
    try:
        return typer.prompt(what, hide_input=True, confirmation_prompt=True)
    except typer.Abort:
        raise fail("no password given (MEMORACE_PASSWORD, or type it when asked)") from None


@app.command(rich_help_panel=SERVER)
def signup(
    username: Annotated[str, typer.Argument(help="the username you want")],
    team: Annotated[str, typer.Option(help="make a new team of this name")] = "",
    invite: Annotated[str, typer.Option(help="or join the team whose code this is")] = "",
    as_json: Annotated[bool, JSON] = False,
) -> None:
    """Sign up (where the contest allows it): in a new team, or a team by its code."""
    if bool(team) == bool(invite):
        raise fail("give --team NAME to make a team, or --invite CODE to join one")
    password = _password("password (8+ characters)")
    with connect() as client, server_errors():
        made = client.sign_up(username, password, team, invite)
    _said(made, as_json, made.get("detail", ""))


@app.command(rich_help_panel=SERVER)
def invite(as_json: Annotated[bool, JSON] = False) -> None:
    """A new invitation code for your team (the previous one stops working)."""
    with connect() as client, server_errors():
        made = client.account("invite")
    _said(made, as_json, f"team {made['team']}: invitation code {made['invite_code']}")


@app.command(rich_help_panel=SERVER)
def pending(as_json: Annotated[bool, JSON] = False) -> None:
    """Accounts waiting for an organizer's approval (organizers)."""
    with connect() as client, server_errors():
        rows = client.account("pending")
    if as_json:
        out.print_json(json.dumps(rows))
        return
    table = new_table("pending accounts", ("username", "team"), ("username", "team"))
    for r in rows:
        table.add_row(str(r["username"]), str(r["team"] or "—"))
    show(table, whole=(0,))


@app.command(rich_help_panel=SERVER)
def approve(username: Annotated[str, USER]) -> None:
    """Approve a pending account (organizers): it may log in."""
    with connect() as client, server_errors():
        _said(client.account("approve", username), False, "")


@app.command(rich_help_panel=SERVER)
def lock(
    username: Annotated[str, USER],
    unlock: Annotated[bool, typer.Option("--unlock", help="unlock it instead")] = False,
) -> None:
    """Lock an account (organizers): its tokens are revoked, its web sessions end."""
    with connect() as client, server_errors():
        _said(client.account("lock", username, locked=not unlock), False, "")


@app.command("reset-password", rich_help_panel=SERVER)
def reset_password(username: Annotated[str, USER]) -> None:
    """Set a new password for an account (organizers); its web sessions end."""
    password = _password(f"new password for {username}")
    with connect() as client, server_errors():
        _said(client.account("password", username, password=password), False, "")


def _said(answer: dict[str, Any], as_json: bool, text: str) -> None:
    if as_json:
        out.print_json(json.dumps(answer))
        return
    if not text:
        state = (
            "locked" if answer.get("locked") else "pending" if answer.get("pending") else "active"
        )
        text = f"{answer.get('username')} ({answer.get('team') or 'no team'}): {state}"
    out.print(text, markup=False, soft_wrap=True)
