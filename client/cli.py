"""The `memorace` command: the offline judge's commands (`judge.cli`) and, beside
them, the ones that talk to a MemoRace server: `submit`, `status`, `leaderboard`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from client import accounts_cli, messages_cli
from client.server import connect, server_errors
from judge import cli as judge_cli
from judge.console import err, fmt, new_table, out, print_cases, progress_bar, show
from tracer import cli as trace_cli

if TYPE_CHECKING:  # httpx loads only for the commands that talk to a server
    from client.http import Client

app = typer.Typer(
    help="MemoRace: judge memory planners here, or submit them to a MemoRace server.",
    no_args_is_help=True,
)
app.add_typer(judge_cli.app)  # no name: the judge's commands join these at the top level
app.add_typer(trace_cli.app, name="trace")  # imports torch only when a recording runs
app.add_typer(messages_cli.app)  # clarify, clarifications, announcements; answer, announce
app.add_typer(accounts_cli.app)  # signup, invite; pending, approve, lock, reset-password
SERVER = "Server (MEMORACE_URL, MEMORACE_TOKEN or ~/.config/memorace/config.toml)"


@app.command(rich_help_panel=SERVER)
def submit(
    file: Annotated[Path, typer.Argument(help="the planner: .py, .cpp, .zip or .tar.gz")],
    problem: Annotated[str, typer.Option(help="problem slug")],
    follow: Annotated[bool, typer.Option(help="watch the judging until it ends")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object")] = False,
) -> None:
    """Upload FILE for PROBLEM to the server and follow its judging.

    Exit status: 0 when judged (or queued, with --no-follow), 1 when the
    judging ended in error, 2 when the request failed.
    """
    with connect() as client, server_errors():
        sub = client.submit(file, problem)
        if sub.get("reused") and not as_json:
            err.print(f"identical to an earlier upload: reusing submission #{sub['id']}")
        if follow and sub.get("status") not in _final():
            sub = _follow(client, sub, quiet=as_json)
    _show_submission(sub, as_json)
    raise typer.Exit(1 if sub.get("status") == "error" else 0)


@app.command("status", rich_help_panel=SERVER)
def status_cmd(
    sub_id: Annotated[int, typer.Argument(metavar="ID", help="submission id")],
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object")] = False,
) -> None:
    """Show a submission: its status and the results so far."""
    with connect() as client, server_errors():
        sub = client.submission(sub_id)
    _show_submission(sub, as_json)


@app.command("leaderboard", rich_help_panel=SERVER)
def leaderboard_cmd(
    slug: Annotated[str, typer.Argument(help="problem slug")],
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object")] = False,
) -> None:
    """Show the leaderboard of a problem."""
    with connect() as client, server_errors():
        board = client.leaderboard(slug)
    if as_json:
        out.print_json(json.dumps(board))
        return
    notes = [n for n, on in (("frozen", board.get("frozen")),) if on]
    notes.append("hidden revealed" if board.get("hidden_revealed") else "hidden not revealed")
    columns = ("rank", "team", "public", "hidden", "submission", "submitted at")
    title = f"{board.get('problem', slug)} leaderboard ({', '.join(notes)})"
    if board.get("contest"):
        title = f"{board['contest']}: {title}"
    table = new_table(title, columns, ("team", "submitted at"))
    for row in board.get("rows", []):
        table.add_row(
            str(row.get("rank")),
            str(row.get("team")),
            fmt(row.get("public_score")),
            fmt(row.get("hidden_score")),
            f"#{row.get('submission_id')}",
            str(row.get("submitted_at", "")),
        )
    if board.get("rows"):
        show(table, whole=(1,))  # team names
    else:
        out.print("no submissions yet")


@app.command("contests", rich_help_panel=SERVER)
def contests_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="one JSON array")] = False,
) -> None:
    """The contests you may see (your team's). Choose one for the other commands with
    MEMORACE_CONTEST=<slug> or `contest = "<slug>"` in the config file."""
    with connect() as client, server_errors():
        found = client.contests()
    if as_json:
        out.print_json(json.dumps(found))
        return
    table = new_table("contests", ("slug", "title", "current", "starts", "ends"), ("title",))
    for c in found:
        current = "yes" if c.get("current") else ""
        table.add_row(*(str(c.get(k) or "") for k in ("slug", "title")), current,
                      str(c.get("start_at") or ""), str(c.get("end_at") or ""))  # fmt: skip
    show(table, whole=(0,))


@app.command("final", rich_help_panel=SERVER)
def final_cmd(
    slug: Annotated[str, typer.Argument(help="problem slug")],
    picks: Annotated[list[int] | None, typer.Argument(help="submission ids to pick")] = None,
    clear: Annotated[bool, typer.Option("--clear", help="drop the picks")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object")] = False,
) -> None:
    """Show or choose the submissions of your team that the final judging takes."""
    with connect() as client, server_errors():
        view = client.final_picks(slug, [] if clear else (picks or None))
    if as_json:
        out.print_json(json.dumps(view))
        return
    ids = ", ".join(f"#{i}" for i in view.get("judged_at_the_end", [])) or "none yet"
    how = "your picks" if view.get("picked") else "your best public submission"
    out.print(f"{slug}: the final judging takes {ids} ({how}; up to "
              f"{view.get('picks_allowed')} picks{', now fixed' if view.get('locked') else ''})",
              markup=False, highlight=False)  # fmt: skip
    if view.get("hidden_judging") != "final":
        out.print("this contest judges hidden cases with every submission", markup=False)


def _final() -> frozenset[str]:
    from client.http import FINAL

    return FINAL


def _follow(client: Client, sub: dict[str, Any], quiet: bool) -> dict[str, Any]:
    """Live progress on stderr until the judging ends; returns the final Submission."""
    with progress_bar(quiet) as bar:
        task = bar.add_task(_progress_text(sub), total=sub.get("cases_total") or None, completed=0)
        try:
            for event, data in client.follow(sub["id"]):
                if event == "end":
                    return data
                if event in ("status", "case"):
                    text = (
                        _progress_text(sub | data) if event == "status" else _case_text(sub, data)
                    )
                    bar.update(
                        task,
                        description=text,
                        total=data.get("cases_total") or None,
                        completed=data.get("cases_done") or 0,
                    )
        except KeyboardInterrupt:
            # Stopping the watch does not stop the judging: say how to look again.
            err.print(f"stopped following; the judging goes on: memorace status {sub['id']}")
            raise typer.Exit(130) from None
    return client.submission(sub["id"])  # follow always ends with "end"; be safe anyway


def _progress_text(sub: dict[str, Any]) -> str:
    text = f"#{sub['id']} {sub.get('status', '')}"
    if sub.get("status") == "queued" and sub.get("queue_position") is not None:
        text += f" (position {sub['queue_position']})"
    return text


def _case_text(sub: dict[str, Any], case: dict[str, Any]) -> str:
    return f"#{sub['id']} {case.get('case', '')}: {case.get('verdict', '')}"


def _show_submission(sub: dict[str, Any], as_json: bool) -> None:
    """The server's own scores are shown: the API sends no case weights, so they
    cannot be recomputed here (and it withholds the hidden score before the reveal)."""
    if as_json:
        out.print_json(json.dumps(sub))
        return
    if sub.get("results"):
        title = f"#{sub.get('id')} {sub.get('filename', '')} on {sub.get('problem')} "
        title += f"v{sub.get('problem_version')} (server sandbox)"
        print_cases(title, sub["results"], sub.get("public_score"), sub.get("hidden_score"))
    state = sub.get("status", "")
    line = f"submission #{sub.get('id')} {sub.get('filename', '')}: {state}"
    if state == "queued" and sub.get("queue_position") is not None:
        line += f", position {sub['queue_position']} in the queue"
    elif state == "running":
        line += f", {sub.get('cases_done', 0)}/{sub.get('cases_total', 0)} cases"
    out.print(line, markup=False, highlight=False)
    if sub.get("status_detail"):
        out.print(Text(sub["status_detail"], style="red" if state == "error" else ""))
