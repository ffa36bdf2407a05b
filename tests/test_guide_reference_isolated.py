"""The guides' API reference (docs/_ext/openapi_reference.py) is rendered from an app
on a throwaway data directory and database, whatever MEMORACE_* says: `make run` and
`make test` build the guides on an operator's host, where those name the live service,
whose database the build would otherwise migrate and whose data directory it would
write a secret key into."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
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
