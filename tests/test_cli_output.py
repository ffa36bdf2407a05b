"""What `memorace` prints: whole case names at 80 columns, verdict counts as words, and
the fields a server withholds before the reveal shown as "hidden", never "None"."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from client import cli as client_cli
from judge import console
from judge.scoring import CaseResult
from judge.verdict import Verdict
from tests.test_package import CASE, GOOD_TOML, make_package

LONG = "p01-paged128-tensor-parallel-4-pipeline-8-first-stage-with-a-long-name"
NAMES = [LONG, "p02-reserved-pp4-middle-stage", "h01-growing-full-model-last"]


def local_cases() -> list[dict]:
    """Cases as `memorace judge` has them (CaseResult.as_dict), with 2^62-sized figures."""
    big = 2**62
    results = [
        CaseResult(NAMES[0], "public", 1.0, Verdict.OK, "", big, big, 1.0, 0.25),
        CaseResult(NAMES[1], "public", 1.0, Verdict.INVALID_PLAN, "overlap at [3, 4)", big - 1),
        CaseResult(NAMES[2], "hidden", 1.0, Verdict.OK, "", 10, 12, 0.8333, 0.5),
    ]
    return [r.as_dict() for r in results]


# A hidden case as the API sends it before the reveal (api.reads.hidden.result_dict):
# name and split, the verdict (or only "JUDGED"), every other field null.
WITHHELD = {
    "case": NAMES[2], "split": "hidden", "verdict": "JUDGED", "score": None, "message": None,
    "peak": None, "lower_bound": None, "time_s": None, "makespan_us": None, "log": None,
    "plan_digest": None, "withheld": True,
}  # fmt: skip


def render(cases: list[dict], terminal: bool, width: int = 80, hidden: float | None = 50.0):
    buf = io.StringIO()
    saved = console.out
    console.out = Console(file=buf, width=width, force_terminal=terminal, no_color=True)
    try:
        console.print_cases("title", cases, 66.6, hidden)
    finally:
        console.out = saved
    return re.sub(r"\x1b\[[0-9;]*m", "", buf.getvalue())  # styles (bold, italic) off


def test_into_a_pipe_every_case_is_one_whole_line_at_80_columns() -> None:
    text = render(local_cases(), terminal=False)
    rows = [line for line in text.splitlines() if ": " not in line]  # not the messages
    lines = {name: [row for row in rows if name in row] for name in NAMES}
    assert all(len(found) == 1 for found in lines.values()), text
    assert str(2**62) in lines[LONG][0]  # numbers are whole too
    assert "…" not in text


def test_on_an_80_column_terminal_nothing_is_cut() -> None:
    text = render(local_cases(), terminal=True)
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    # Names that fit stay on one line; the longest wraps inside its cell, all of it shown.
    assert NAMES[1] in text and NAMES[2] in text
    first = [line.split()[0] for line in text.splitlines() if line[:1].strip()]
    assert LONG in "".join(first)  # the first column's pieces, top to bottom


def test_verdicts_are_counted_in_words() -> None:
    text = render(local_cases(), terminal=False)
    assert "verdicts: OK 2, INVALID_PLAN 1" in text
    assert "{" not in text and "'OK'" not in text


def test_withheld_fields_show_as_hidden() -> None:
    bare = {"case": "h02", "split": "hidden", "verdict": None}  # withholding even more
    cases = [*local_cases()[:2], WITHHELD, bare]
    for terminal in (False, True):
        text = render(cases, terminal, hidden=None)
        assert "None" not in text and "JUDGED" in text
        row = next(line for line in text.splitlines() if NAMES[2] in line)
        assert row.split()[3:] == ["hidden"] * 4, row  # peak, lower bound, score, time
        assert "hidden withheld" in text


def test_status_of_a_submission_before_the_reveal(capsys: pytest.CaptureFixture[str]) -> None:
    sub = {
        "id": 7, "filename": "plan.py", "problem": "toy", "problem_version": 1,
        "status": "done", "status_detail": "judged (judge): 2 OK; 1 hidden judged",
        "public_score": 50.0, "hidden_score": None, "cases_done": 3, "cases_total": 3,
        "results": [*local_cases()[:1], WITHHELD],
    }  # fmt: skip
    client_cli._show_submission(sub, as_json=False)
    text = capsys.readouterr().out
    assert "verdicts: OK 1, JUDGED 1" in text and "None" not in text
    client_cli._show_submission(sub, as_json=True)
    assert json.loads(capsys.readouterr().out) == sub  # --json: the server's object, as sent


def test_problem_check_in_a_pipe_at_columns_80(tmp_path: Path) -> None:
    """The real command in a real pipe, COLUMNS=80: whole case names, one line each."""
    long_name = "a-case-name-far-longer-than-any-column-of-an-eighty-column-table"
    pkg = make_package(
        tmp_path,
        GOOD_TOML.replace('name = "one"', f'name = "{long_name}"'),
        {f"public/{long_name}": CASE, "hidden/two": CASE},
    )
    run = subprocess.run(
        [sys.executable, "-m", "client", "problem", "check", str(pkg)],
        capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "80"},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert any(long_name in line for line in run.stdout.splitlines()), run.stdout
