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
from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

# Markup off: what they print quotes data (case and team names, messages such as
# "no [memory] events"), and rich would take "[memory]" for a tag and drop it. Styles
# are given as Text (Text.assemble) where they are meant.
out = Console(markup=False, highlight=False)
err = Console(stderr=True, markup=False, highlight=False)

NONE = "—"  # no value (a case that never ran, a split without cases)
WITHHELD = "hidden"  # a value the server keeps back until the reveal
WIDEST = 10_000  # columns: more than any table here needs
GAP = 2  # columns between two cells: the box's divider and one space
NARROW = 6  # a wrapped number or name keeps at least this many columns a line


def fail(message: str, code: int = 2) -> typer.Exit:
    """`error: message` on stderr, one line; raise the returned Exit. The message is
    text, not markup: it quotes input ("--slug '[/red]'" made rich raise)."""
    err.print(Text.assemble(("error:", "red"), " ", message), highlight=False, soft_wrap=True)
    return typer.Exit(code)


def progress_bar(quiet: bool) -> Progress:
    """A bar on stderr (stdout stays the result), gone when done; none when quiet."""
    return Progress(
        TextColumn("{task.description}", markup=False),  # a planner's and a case's name
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


def new_table(title: str, columns: Sequence[str], left: Iterable[str]) -> Table:
    """Columns in `left` are text (left-aligned), the rest numbers. Nothing is ever
    cut with "…": a cell too wide for its column wraps inside it (see `show`)."""
    table = Table(
        title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True
    )
    text = set(left)
    for col in columns:
        table.add_column(col, justify="left" if col in text else "right", overflow="fold")
    return table


def show(table: Table, whole: Sequence[int] = (0,)) -> None:
    """Print `table`. Into a pipe or a file it keeps its natural width: one line per row,
    whole names for grep and diff. On a terminal it fits the width: the `whole`
    columns (names), first ones first, stay on one line while the others can still
    show their header words; what does not fit wraps inside its cell."""
    if out.is_terminal:
        _keep_whole(table, whole, out.width)
        out.print(table)
        return
    natural = out.measure(table, options=out.options.update(max_width=WIDEST)).maximum
    # print(width=) cannot widen a console: a wide one for this table alone.
    wide = Console(file=out.file, width=max(natural, out.width), no_color=True, markup=False)
    wide.print(table)


def _keep_whole(table: Table, whole: Sequence[int], width: int) -> None:
    """Give every column a width that fits `width`: numbers wrap first (down to
    NARROW), then the `whole` columns, the last named first; a name is cut into
    lines only when nothing else is left to wrap. Rich's own shrinking squeezes
    the widest column first, which is usually the case name."""
    cells = [[str(column.header), *map(str, column.cells)] for column in table.columns]
    widths = [max(cell_len(word) for cell in col for word in cell.split() or [""]) for col in cells]
    excess = sum(widths) + GAP * (len(widths) - 1) - width
    all_ = range(len(widths))
    others = [i for i in all_ if i not in whole]
    groups = [(others, NARROW), *(([i], NARROW) for i in reversed(whole)), (all_, 1)]
    for group, floor in groups:
        while excess > 0 and (wide := [i for i in group if widths[i] > floor]):
            widest = max(wide, key=lambda i: widths[i])  # first of the widest on a tie
            widths[widest] -= 1
            excess -= 1
    for column, w in zip(table.columns, widths, strict=True):
        column.width = w


def print_cases(
    title: str,
    cases: Sequence[Mapping[str, Any]],
    public_score: float | None,
    hidden_score: float | None,
) -> None:
    """The case table, each case's message, then the scores and verdict counts."""
    columns = ["case", "split", "verdict", "peak", "lower bound", "score", "time s"]
    keys = ["peak", "lower_bound", "score", "time_s"]
    for key, header in _optional_columns(cases):
        columns.append(header)
        keys.append(key)
    table = new_table(title, columns, columns[:3])
    for case in cases:
        verdict = _verdict(case)
        table.add_row(
            Text(str(case.get("case", ""))),  # Text: names and verdicts are not markup
            Text(str(case.get("split", ""))),
            Text(verdict, style={"OK": "green", "JUDGED": ""}.get(verdict, "red")),
            *(_cell(case, key) for key in keys),
        )
    show(table, whole=(0, 2))  # the case name and its verdict
    for case in cases:
        if case.get("message"):
            out.print(f"{case.get('case', '')}: {case['message']}", markup=False, highlight=False)
    withheld = any(c.get("withheld") for c in cases)
    hidden = "withheld" if withheld and hidden_score is None else fmt(hidden_score)
    out.print(
        f"public {fmt(public_score)}  hidden {hidden}  "
        f"verdicts: {verdict_counts(_verdict(c) for c in cases)}",
        markup=False,
        highlight=False,
    )


# Columns shown only when some case has them: the offload type's simulated makespan, an
# interactive type's (online) time per request from the judge's write to the answer.
OPTIONAL = (("makespan_us", "makespan µs"), ("request_us_mean", "µs/request"),
            ("request_us_p99", "p99 µs/request"))  # fmt: skip


def _optional_columns(cases: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    return [(k, h) for k, h in OPTIONAL if any(c.get(k) is not None for c in cases)]


def verdict_counts(verdicts: Iterable[str]) -> str:
    """ "OK 12, INVALID_PLAN 1": most frequent first, then by name; "none" when empty."""
    counts = Counter(verdicts)
    ordered = sorted(counts.items(), key=lambda item: (item[0] != "OK", -item[1], item[0]))
    return ", ".join(f"{verdict} {n}" for verdict, n in ordered) or "none"


def _cell(case: Mapping[str, Any], key: str) -> str:
    value = case.get(key)
    if value is None and case.get("withheld"):
        return WITHHELD
    if key.startswith("request_us") and isinstance(value, int | float):
        return f"{value:.1f}"
    return f"{value:.4f}" if key == "score" and isinstance(value, int | float) else fmt(value)


def _verdict(case: Mapping[str, Any]) -> str:
    return str(case.get("verdict") or WITHHELD)  # a server that withholds even the verdict
