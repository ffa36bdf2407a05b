"""The guides' site is safe to build and to serve.

/guide serves the built pages only: never Sphinx's own files (the pickled build
environment in .doctrees/, with the build host's paths and configuration, or
.buildinfo), which `make guide` used to leave inside the served folder; the refusal
is a 404 under the guides' policy. The Makefile keeps the doctrees out of it.

The guides' API reference (docs/_ext/openapi_reference.py) is rendered from an app
on a throwaway data directory and database, whatever MEMORACE_* says: `make run` and
`make test` build the guides on an operator's host, where those name the live service,
whose database the build would otherwise migrate and whose data directory it would
write a secret key into.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from api.routes.guide import CSP, add_guide

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    site = tmp_path / "guide"
    for rel in ("index.html", "_static/doctools.js", ".buildinfo",
                ".doctrees/environment.pickle", "operator/index.html"):  # fmt: skip
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(f"{rel}: /home/operator/memorace\n")
    app = FastAPI()
    add_guide(app, site)
    return TestClient(app)


@pytest.mark.parametrize(
    "path", [".buildinfo", ".doctrees/environment.pickle", "operator/../.buildinfo",
             "%2edoctrees/environment.pickle", "_static/..%2f.buildinfo"],
)  # fmt: skip
def test_sphinx_files_are_not_served(client: TestClient, path: str) -> None:
    answer = client.get(f"/guide/{path}")
    assert answer.status_code == 404
    assert "/home/operator" not in answer.text
    assert answer.headers["content-security-policy"] == CSP


def test_pages_are_served(client: TestClient) -> None:
    for path in ("", "_static/doctools.js", "operator/"):
        answer = client.get(f"/guide/{path}")
        assert answer.status_code == 200, path
        assert answer.headers["content-security-policy"] == CSP


def test_make_guide_keeps_the_doctrees_out_of_the_site() -> None:
    recipe = re.search(r"^guide:.*\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.M)
    assert recipe is not None
    sphinx = next(line for line in recipe.group(1).splitlines() if "sphinx" in line)
    doctrees = re.search(r" -d (\S+)", sphinx)
    assert doctrees is not None and not doctrees.group(1).startswith("api/")


SCRIPT = """
import json, sys
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/docs/_ext"]
from openapi_reference import openapi_document
print(json.dumps(sorted(openapi_document()["paths"])))
"""


def test_the_reference_never_touches_the_hosts_service(tmp_path: Path) -> None:
    live = tmp_path / "live"  # the operator's data directory, not made yet
    env = {**os.environ, "MEMORACE_DATA_DIR": str(live),
           "MEMORACE_DATABASE_URL": f"sqlite:///{tmp_path}/live.sqlite"}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(ROOT)],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    paths = json.loads(done.stdout.strip().splitlines()[-1])
    assert "/api/v1/submissions" in paths
    assert not (tmp_path / "live.sqlite").exists()
    assert not live.exists()
