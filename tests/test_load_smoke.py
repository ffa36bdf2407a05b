"""The load test the project keeps (benchmarks/load) still runs: 10 clients for 5 s on
the embedded backend. It reports figures; it asserts none (this machine is shared)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from tests.conftest import IN_CI, ROOT

RUN = ROOT / "benchmarks" / "load" / "run.py"
ENDPOINTS = {"leaderboard", "submission list", "problem page"}


def test_load_profile_runs_and_reports(tmp_path):
    # Looked up, not imported: importing locust monkey-patches this process for gevent.
    if importlib.util.find_spec("locust") is None:
        if IN_CI:
            pytest.fail("locust is missing: the dev extra brings the load extra")
        pytest.skip("locust is not installed (pip install -e '.[load]')")
    out = tmp_path / "load.json"
    cmd = [sys.executable, str(RUN), "--backend", "embedded", "--clients", "10",
           "--duration", "5", "--teams", "2", "--users-per-team", "2", "--submit-every", "3",
           "--json", str(out)]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "embedded, 10 clients" in done.stdout
    assert "the most clients that meet it" in done.stdout
    (step,) = json.loads(out.read_text())
    assert step["backend"] == "embedded" and step["clients"] == 10
    assert step["rss_peak_mb"] > 0
    rows = {r["name"]: r for r in step["rows"]}
    assert rows.keys() >= ENDPOINTS, rows.keys()
    assert all(rows[name]["requests"] > 0 for name in ENDPOINTS)
