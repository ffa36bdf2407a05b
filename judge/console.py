"""How the command line shows judging results: one case table and one summary line,
for a local judging (`memorace judge`) and a server's submission (`memorace status`).

Cases are mappings with the keys of `CaseResult.as_dict()`, which are also the
server's: a field the server withholds until the reveal (a hidden case's score,
peak, time ...) is null or absent there, and is shown as "hidden", never as "None".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

out = Console()
err = Console(stderr=True)

NONE = "—"  # no value (a case that never ran, a split without cases)
WITHHELD = "hidden"  # a value the server keeps back until the reveal


def fail(message: str, code: int = 2) -> typer.Exit:
    """`error: message` on stderr; raise the returned Exit."""
    err.print(f"[red]error:[/red] {message}", highlight=False)
    return typer.Exit(code)


def progress_bar(quiet: bool) -> Progress:
    """A bar on stderr (stdout stays the result), gone when done; none when quiet."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=quiet,
        transient=True,
    )


def fmt(value: object) -> str:
    if value is None:
        return NONE
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def new_table(title: str, columns: Iterable[str], left: Iterable[str]) -> Table:
    """Columns in `left` are text (left-aligned), the rest numbers. Nothing is ever
    cut with "…": a cell too wide for the terminal wraps inside its column."""
    table = Table(title=title)
    text = set(left)
    for col in columns:
        table.add_column(col, justify="left" if col in text else "right", overflow="fold")
    return table


def print_cases(
    title: str,
    cases: Sequence[Mapping[str, Any]],
    public_score: float | None,
    hidden_score: float | None,
) -> None:
    """The case table, each case's message, then the scores and verdict counts."""
    timed = any(c.get("makespan_us") is not None for c in cases)
    columns = ["case", "split", "verdict", "peak", "lower bound", "score", "time s"]
    table = new_table(title, columns + (["makespan µs"] if timed else []), columns[:3])
    for case in cases:
        keys = ["peak", "lower_bound", "score", "time_s"] + (["makespan_us"] if timed else [])
        verdict = str(case.get("verdict", ""))
        table.add_row(
            Text(str(case.get("case", ""))),  # Text: names and verdicts are not markup
            Text(str(case.get("split", ""))),
            Text(verdict, style={"OK": "green", "JUDGED": ""}.get(verdict, "red")),
            *(_cell(case, key) for key in keys),
        )
    out.print(table)
    for case in cases:
        if case.get("message"):
            out.print(f"{case.get('case', '')}: {case['message']}", markup=False, highlight=False)
    withheld = any(c.get("withheld") for c in cases)
    hidden = WITHHELD if withheld and hidden_score is None else fmt(hidden_score)
    out.print(
        f"public {fmt(public_score)}  hidden {hidden}  "
        f"verdicts: {verdict_counts(str(c.get('verdict', '')) for c in cases)}",
        markup=False,
        highlight=False,
    )


def verdict_counts(verdicts: Iterable[str]) -> str:
    """ "OK 12, INVALID_PLAN 1": most frequent first, then by name; "none" when empty."""
    counts = Counter(verdicts)
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{verdict} {n}" for verdict, n in ordered) or "none"


def _cell(case: Mapping[str, Any], key: str) -> str:
    value = case.get(key)
    if value is None and case.get("withheld"):
        return WITHHELD
    return f"{value:.4f}" if key == "score" and isinstance(value, int | float) else fmt(value)
