"""Clarifications and announcements on the command line (api.actions.messages): a team asks the
jury and reads the answers and announcements; an organizer lists every question,
answers one (to the asking team or to everyone) and announces."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from client.server import connect, server_errors
from judge.console import new_table, out, show

app = typer.Typer()
SERVER = "Server (MEMORACE_URL, MEMORACE_TOKEN or ~/.config/memorace/config.toml)"
JSON = typer.Option("--json", help="JSON")


@app.command(rich_help_panel=SERVER)
def clarify(
    question: Annotated[str, typer.Argument(help="your question to the jury")],
    problem: Annotated[str, typer.Option(help="the problem it is about (a slug)")] = "",
    as_json: Annotated[bool, JSON] = False,
) -> None:
    """Ask the jury a question; only your team sees it unless the jury answers it to all."""
    with connect() as client, server_errors():
        asked = client.ask(question, problem)
    if as_json:
        out.print_json(json.dumps(asked))
    else:
        out.print(f"question #{asked['id']} sent to the jury", markup=False)


@app.command(rich_help_panel=SERVER)
def clarifications(
    everyone: Annotated[bool, typer.Option("--all", help="every team's (organizers)")] = False,
    as_json: Annotated[bool, JSON] = False,
) -> None:
    """Your team's questions and those the jury answered to everyone, newest first."""
    with connect() as client, server_errors():
        rows = client.messages("clarifications", everyone)
    _show(rows, "clarifications", as_json)


@app.command(rich_help_panel=SERVER)
def announcements(as_json: Annotated[bool, JSON] = False) -> None:
    """The jury's announcements, newest first."""
    with connect() as client, server_errors():
        rows = client.messages("announcements")
    _show(rows, "announcements", as_json)


@app.command(rich_help_panel=SERVER)
def messages(
    count: Annotated[int, typer.Option(min=0, help="stop after this many (0: never)")] = 0,
    as_json: Annotated[bool, JSON] = False,
) -> None:
    """Follow questions, answers and announcements live, as the jury makes them (one line
    each; a JSON object per line with --json) until Ctrl-C or --count."""
    with connect() as client, server_errors():
        for n, m in enumerate(client.live_messages(), 1):
            if as_json:
                print(json.dumps(m), flush=True)
            else:
                out.print(_line(m), markup=False, soft_wrap=True)
            if n == count:
                return


def _line(m: dict[str, Any]) -> str:
    """One line, with no control character of anyone's text (a question's escape codes
    would reach the organizer's terminal)."""
    return "".join(c if c.isprintable() else " " for c in _words(m))


def _words(m: dict[str, Any]) -> str:
    about = f" ({m['problem']})" if m.get("problem") else ""
    if m.get("kind") == "announcement":
        return f"announcement #{m.get('id')}{about}: {m.get('text')}"
    who = f" from {m['team']}" if m.get("team") else ""
    if not m.get("answer"):
        return f"question #{m.get('id')}{who}{about}: {m.get('text')}"
    return f"answer to #{m.get('id')}{about}, to {m.get('audience')}: {m.get('answer')}"


@app.command(rich_help_panel=SERVER)
def answer(
    message_id: Annotated[int, typer.Argument(help="the question's number")],
    text: Annotated[str, typer.Argument(help="the answer")],
    to_all: Annotated[bool, typer.Option("--to-all", help="everyone sees it")] = False,
) -> None:
    """Answer a question (organizers): to the asking team, or with --to-all to everyone."""
    with connect() as client, server_errors():
        done = client.answer(message_id, text, "all" if to_all else "team")
    out.print(f"question #{done['id']} answered to {done['audience']}", markup=False)


@app.command(rich_help_panel=SERVER)
def announce(
    text: Annotated[str, typer.Argument(help="the announcement")],
    problem: Annotated[str, typer.Option(help="the problem it is about (a slug)")] = "",
) -> None:
    """Announce to every team (organizers)."""
    with connect() as client, server_errors():
        done = client.announce(text, problem)
    out.print(f"announcement #{done['id']} sent", markup=False)


def _show(rows: list[dict[str, Any]], title: str, as_json: bool) -> None:
    if as_json:
        out.print_json(json.dumps(rows))
        return
    if not rows:
        out.print(f"no {title} yet", markup=False)
        return
    columns = ("#", "problem", "text", "answer", "to", "at")
    table = new_table(title, columns, columns[1:5])
    for r in rows:
        asked = r.get("text", "") + (f" ({r['team']})" if r.get("team") else "")
        answered = r.get("answer") or ("" if r.get("kind") == "announcement" else "(waiting)")
        table.add_row(str(r.get("id")), r.get("problem") or "general", asked, answered,
                      str(r.get("audience")), str(r.get("created_at", ""))[:19])  # fmt: skip
    show(table, whole=(0,))
