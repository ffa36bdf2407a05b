"""`judge` is the offline judge: it never imports the service client, an HTTP client
or the service's frameworks (DESIGN.md, "Layout"); `client` may import `judge`."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {"client", "api", "worker", "httpx", "fastapi", "starlette", "sqlalchemy", "celery"}


def test_no_judge_module_names_a_forbidden_import() -> None:
    """Static: also catches imports inside functions, which a run may never reach."""
    found = []
    for path in sorted((ROOT / "judge").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            found += [f"{path.relative_to(ROOT)}: {n}" for n in names if _top(n) in FORBIDDEN]
    assert not found


def test_importing_all_of_judge_loads_no_forbidden_module() -> None:
    """At run time, in a fresh interpreter: nothing forbidden arrives indirectly either."""
    code = (
        "import importlib, json, pkgutil, sys, judge\n"
        "for m in pkgutil.walk_packages(judge.__path__, 'judge.'):\n"
        "    if m.name not in ('judge.__main__',):\n"
        "        importlib.import_module(m.name)\n"
        "print(json.dumps(sorted({n.split('.')[0] for n in sys.modules})))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    loaded = set(json.loads(run.stdout.splitlines()[-1]))
    assert "judge" in loaded and not loaded & FORBIDDEN


def test_the_memorace_command_keeps_every_command() -> None:
    """The entry point composes both: the judge's commands and the server ones."""
    run = subprocess.run(
        [sys.executable, "-m", "client", "--help"],
        cwd=ROOT, capture_output=True, text=True, check=True, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    for command in ("verify", "judge", "baselines", "problem", "submit", "status", "leaderboard"):
        assert f" {command} " in run.stdout, run.stdout


def _top(name: str) -> str:
    return name.split(".")[0]
