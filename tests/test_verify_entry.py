"""The `memorace` entry point's quick `verify` (client.main): byte for byte the same
output and exit status as the full command line (client.cli's typer app) for valid,
invalid and malformed inputs and every argument form; anything it does not plainly
understand goes to the full command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judge.verify_command import quick_args
from tests.conftest import ROOT

CASE = "id,lower,upper,size\na,0,2,8\nb,1,3,8\n"
PLANS = {
    "ok": "id,offset\na,0\nb,8\n",
    "overlap": "id,offset\na,0\nb,4\n",
    "malformed": "id,offset\na,zero\nb,8\n",
}
NAMED = "import sys; sys.argv[0] = 'memorace'; "  # as the installed command names itself
FULL = NAMED + "from client.cli import app; app()"
QUICK = NAMED + "from client.main import main; main()"


def run(entry: list[str], args: list[str], cwd: Path) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, *entry, *args], cwd=cwd, capture_output=True, text=True, check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "COLUMNS": "80"},
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["c.csv", "ok.csv"],
        ["c.csv", "overlap.csv", "--json"],
        ["--json", "c.csv", "malformed.csv"],
        ["c.csv", "ok.csv", "--capacity", "12"],
        ["c.csv", "ok.csv", "--capacity=64", "--type=offset"],
        ["c.csv", "missing.csv"],
        ["missing.csv", "ok.csv"],
        ["c.csv", "ok.csv", "--type", "nonsense"],
        ["c.csv", "ok.csv", "--capacity", "-3"],
        ["c.csv"],
        ["--help"],
    ],
)
def test_quick_and_full_verify_agree(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "c.csv").write_text(CASE)
    for name, text in PLANS.items():
        (tmp_path / f"{name}.csv").write_text(text)
    quick = run(["-c", QUICK, "verify"], args, tmp_path)
    full = run(["-c", FULL, "verify"], args, tmp_path)
    assert quick == full


@given(st.lists(st.text(max_size=12), max_size=6))
def test_any_arguments_are_read_or_left_to_the_full_command_line(args: list[str]) -> None:
    got = quick_args(args)
    if got is not None:
        case, plan, capacity, type_, as_json = got
        assert any(Path(a) == case for a in args) and any(Path(a) == plan for a in args)
        assert capacity is None or 0 <= capacity < 10**19
        assert type_ is None or not type_.startswith("-")
        assert as_json == ("--json" in args)
