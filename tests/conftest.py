"""Shared test fixtures: paths to the project and to the shared real data."""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("MEMORACE_SHARED_DATA", ROOT.parent / "shared" / "data"))
IN_CI = os.environ.get("CI") == "true"
# In-process services judge no baselines (api.actions.baselines) unless a test asks: they would
# add the system team's submissions to every test's counts. tests.service does the same.
os.environ.setdefault("MEMORACE_BASELINES", "0")
# In-process apps (TestClient) would freeze this test process's heap at each startup;
# the services tests start run as deployed (api.gc_freeze on).
os.environ.setdefault("MEMORACE_HEAP_FREEZE", "0")
# One build cache for the whole run (judge.buildcache): each reference planner's C++ is
# compiled once per sandbox, not once per judging (strong_search: ~15 s of CPU each); the
# service's workers share it (tests.service). A fresh run starts it empty: every test's
# first judging of its own bytes still builds.
BUILD_CACHE_ENV = "MEMORACE_BUILD_CACHE_DIR"


def _remove_quietly(folder: Path) -> None:
    from judge.sandbox.local_fs import remove_tree  # also folders a build made unwritable

    with contextlib.suppress(OSError):
        remove_tree(folder)


if BUILD_CACHE_ENV not in os.environ:
    _builds = Path(tempfile.mkdtemp(prefix="memorace-test-builds-"))
    os.environ[BUILD_CACHE_ENV] = str(_builds)
    atexit.register(_remove_quietly, _builds)


def shared_build_cache() -> dict[str, str]:
    """The run's build cache, for the environment of a service started by a test."""
    return {BUILD_CACHE_ENV: os.environ[BUILD_CACHE_ENV]} if BUILD_CACHE_ENV in os.environ else {}


def shared_data(*parts: str) -> Path:
    """A file of ../shared/data; skipped where it is absent, a failure in CI."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        if IN_CI:
            pytest.fail(f"{path} is missing: CI needs ../shared/data")
        pytest.skip(f"{path} is not on this machine")
    return path


@functools.cache
def compiled(source: Path, defines: tuple[str, ...] = ()) -> Path:
    """A reference planner compiled with the contest's flags, once per test run (the
    strong search takes ~15-25 s of CPU; several modules run it)."""
    from benchmarks.offset_planners import build

    out = Path(tempfile.mkdtemp(prefix="memorace-test-exe-"))
    atexit.register(_remove_quietly, out)
    return build(source, out, defines)


# The shipped problems' hidden splits are made per installation from a secret seed
# (api/actions/shipped.py); the tests make theirs from this fixed one.
TEST_HIDDEN_SEED = "7e57" * 16


@functools.cache
def _shipped_packages() -> Path:
    from api.actions.shipped import run_generators

    out = Path(tempfile.mkdtemp(prefix="memorace-test-problems-"))
    atexit.register(_remove_quietly, out)
    seed = out / "hidden-seed"
    seed.write_text(TEST_HIDDEN_SEED + "\n")
    run_generators(seed, out)
    return out


def shipped(slug: str) -> Path:
    """A shipped problem's complete package: the repository's public split and a hidden
    split made from TEST_HIDDEN_SEED, once per test run (a few seconds)."""
    return _shipped_packages() / slug


@pytest.fixture(scope="session")
def shipped_packages() -> Path:
    """The folder of every shipped problem's complete package (see shipped)."""
    return _shipped_packages()


@functools.cache
def judged_locally(slug: str, planner: str):  # -> judge.pipeline.JudgeReport
    """A reference planner judged on every case of a shipped problem (local sandbox),
    once per session: tests/test_reference_planners.py checks it, tests/test_sandbox.py
    compares the docker sandbox's results with it."""
    from judge.package import load_problem
    from judge.pipeline import judge_planner

    problem = load_problem(shipped(slug))
    return judge_planner(problem, ROOT / "reference_solutions" / planner)


@pytest.fixture
def write(tmp_path: Path):
    """write(name, text_or_bytes) -> path under tmp_path."""

    def _write(name: str, content: str | bytes) -> Path:
        path = tmp_path / name
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        return path

    return _write


def load_script(path: Path):
    """A script of the repository as a module of its own name-by-path (two `pack.py`
    scripts must not share sys.modules['pack']); the script's folder is importable while
    it loads."""
    import importlib.util

    name = "script_" + "_".join(path.relative_to(ROOT).with_suffix("").parts)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


@pytest.fixture(autouse=True, scope="module")
def _engines_closed_after_module() -> Iterator[None]:
    """Each module's databases' pooled connections close when it ends: kept for the
    process's life, a suite of in-process apps on fresh data folders held hundreds of
    SQLite files open (a later test's low open-files limit then failed: EMFILE)."""
    from api.db.session import dispose_engines, engine_urls

    before = engine_urls()
    yield
    dispose_engines(keep=before)
