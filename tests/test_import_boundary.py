"""`judge` is the offline judge: it never imports the service client, an HTTP client
or the service's frameworks (DESIGN.md, "Layout"); `client` may import `judge`.

`api` is layered (docs/architecture.md, "Layout"): it never imports `worker`; the
workers use only the parts of it meant for them; its lowest layer imports nothing
above it; only the app mounts the routes and the pages; every package says what it
owns. Static (AST) checks, so an import inside a function counts too; see
tests/api_imports.py for how an import is resolved to a module."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.api_imports import api_files, imported, module_name, within

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


# The lowest layer of the service: everything above may use it, it uses nothing above.
API_LOWER = ("api.db", "api.blobs", "api.settings", "api.service_urls", "api.errors",
             "api.numbers", "api.news")  # fmt: skip
# Live events are read from the layers below them: reads, actions and access never
# import api.live (the news they publish or hear is api.news, in the lowest layer).
LIVE_BELOW = ("api.reads", "api.actions", "api.access")
# What the workers may take from the service: the database and blobs, the settings,
# the queue (its Celery configuration, the embedded broker), the logs, the news they
# publish, and the contest actions they carry out (today finals, imports, problems and
# submissions: a judging's result, a package's import, a rescore).
WORKER_MAY_IMPORT = ("api.db", "api.blobs", "api.settings", "api.queue", "api.filebroker",
                     "api.logs", "api.news", "api.actions")  # fmt: skip
# The HTTP surface: mounted by the app; the pages reuse the routes' checks and the hot
# reads render a problem's page, so the two may import each other.
API_TOP = ("api.routes", "api.pages")
API_PACKAGES = ("api.routes", "api.pages", "api.reads", "api.live", "api.access", "api.actions")


def test_api_never_imports_worker() -> None:
    """The API enqueues by name (api.queue): it never loads the workers' code."""
    found = [f"{module_name(p)}: {n}" for p in api_files() for n in imported(p, "worker")]
    assert not found


def test_worker_imports_only_what_the_workers_need_of_api() -> None:
    found = [
        f"{module_name(p)}: {n}"
        for p in sorted((ROOT / "worker").rglob("*.py"))
        for n in imported(p, "api")
        if not within(n, WORKER_MAY_IMPORT)
    ]
    assert not found
    assert any(within(n, ("api.actions",)) for n in _worker_imports()), "the rule is stale"


def _api_imports(importer: Callable[[str], bool], imported_: Callable[[str], bool]) -> list[str]:
    """ "module: name" for each api import of an api module that `importer` picks, of a
    name that `imported_` picks."""
    return [
        f"{module_name(p)}: {n}"
        for p in api_files()
        if importer(module_name(p))
        for n in imported(p, "api")
        if imported_(n)
    ]


def test_the_lowest_api_layer_imports_nothing_above_it() -> None:
    lower = lambda name: within(name, API_LOWER)  # noqa: E731
    assert not _api_imports(lower, lambda n: n != "api" and not lower(n))


def test_live_events_sit_above_reads_actions_and_access() -> None:
    assert not _api_imports(lambda m: within(m, LIVE_BELOW), lambda n: within(n, ("api.live",)))


def test_routes_and_pages_are_imported_only_by_the_app_and_each_other() -> None:
    allowed = ("api.app", *API_TOP)
    assert not _api_imports(lambda m: not within(m, allowed), lambda n: within(n, API_TOP))


def test_every_api_package_says_what_it_owns() -> None:
    """A docstring in each package's __init__.py, and the concerns' packages exist."""
    packages = sorted((ROOT / "api").rglob("__init__.py"))
    assert {module_name(p) for p in packages} >= set(API_PACKAGES)
    bare = [module_name(p) for p in packages if not ast.get_docstring(ast.parse(p.read_text()))]
    assert not bare


def test_importing_all_of_worker_loads_no_web_layer() -> None:
    """At run time: what the actions import in turn brings no route, page or app."""
    code = (
        "import importlib, json, pkgutil, sys, worker\n"
        "for m in pkgutil.walk_packages(worker.__path__, 'worker.'):\n"
        "    importlib.import_module(m.name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    loaded = json.loads(run.stdout.splitlines()[-1])
    assert "api.actions.submissions" in loaded
    assert not [n for n in loaded if within(n, ("api.app", *API_TOP, "fastapi"))]


def _worker_imports() -> list[str]:
    return [n for p in sorted((ROOT / "worker").rglob("*.py")) for n in imported(p, "api")]
