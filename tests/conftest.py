"""Shared test fixtures: paths to the project and to the shared real data."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("MEMORACE_SHARED_DATA", ROOT.parent / "shared" / "data"))
IN_CI = os.environ.get("CI") == "true"
# In-process services judge no baselines (api.baselines) unless a test asks: they would
# add the system team's submissions to every test's counts. tests.service does the same.
os.environ.setdefault("MEMORACE_BASELINES", "0")
# In-process apps (TestClient) would freeze this test process's heap at each startup;
# the services tests start run as deployed (api.heap on).
os.environ.setdefault("MEMORACE_HEAP_FREEZE", "0")


def shared_data(*parts: str) -> Path:
    """A file of ../shared/data; skipped where it is absent, a failure in CI."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        if IN_CI:
            pytest.fail(f"{path} is missing: CI needs ../shared/data")
        pytest.skip(f"{path} is not on this machine")
    return path


@functools.cache
def judged_locally(slug: str, planner: str):  # -> judge.pipeline.JudgeReport
    """A reference planner judged on every case of a shipped problem (local sandbox),
    once per session: tests/test_reference_planners.py checks it, tests/test_sandbox.py
    compares the docker sandbox's results with it."""
    from judge.package import load_problem
    from judge.pipeline import judge_planner

    problem = load_problem(ROOT / "problems" / slug)
    return judge_planner(problem, ROOT / "reference_solutions" / planner)


@pytest.fixture
def write(tmp_path: Path):
    """write(name, text_or_bytes) -> path under tmp_path."""

    def _write(name: str, content: str | bytes) -> Path:
        path = tmp_path / name
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        return path

    return _write
