"""`memorace judge --problem` finds a package by path, by slug under ./problems (where
imports and the starter kit put packages: a pip-installed judge has no checkout), or by
slug among the checkout's shipped problems; a missing one is one clear line naming where
it looked, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge.cli import app
from tests.conftest import ROOT
from tests.test_package import make_package

NAIVE = ROOT / "reference_solutions" / "naive.py"


def judge(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["judge", str(NAIVE), *args, "--sandbox", "local", "--json"])
    return result.exit_code, result.output


def test_a_slug_under_the_current_folders_problems(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    make_package(tmp_path / "problems")  # problems/tiny
    monkeypatch.chdir(tmp_path)
    code, output = judge("--problem", "tiny", "--split", "public")
    assert code == 0, output
    assert '"verdict": "OK"' in output or '"OK"' in output, output[-500:]


def test_a_missing_problem_says_where_it_looked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    code, output = judge("--problem", "nowhere")
    assert code != 0 and "Traceback" not in output, output
    assert "no problem package 'nowhere'" in output, output
    assert str(tmp_path / "problems" / "nowhere") in output.replace("\n", ""), output
    code, output = judge("--problem", "../x/")
    assert code != 0 and "no problem package" in output and "Traceback" not in output, output


def test_a_shipped_slug_still_works_from_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["problem", "check", "gpt2-train"])
    assert result.exit_code == 0, result.output
    assert "gpt2-train" in result.output
