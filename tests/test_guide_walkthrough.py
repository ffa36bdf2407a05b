"""The guides run as written: every ```sh block of README.md and the organizer's,
contestant's and author's guides, in that order, in one bash from the repository root,
against a real service (uvicorn and a Celery worker on the embedded defaults that
`make run` uses); blocks another test runs are named in tests/guides.OWN_TESTS. The
site builds (make guide) and `make run`'s service serves a page of each guide.

The service's gpt2-train is its three smallest cases, so that the judgings the
guides start take seconds; everything else is as a new user has it.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.conftest import ROOT
from tests.guides import (
    OWN_TESTS,
    WALKTHROUGH,
    blocks,
    fetch_each_guide,
    guide_files,
    walkthrough_script,
)
from tests.service import answers, serve_script, small_package, start_service, wait_for


def test_every_block_says_whether_it_runs() -> None:
    for path in guide_files():
        text = path.read_text()
        fences = re.findall(r"^```(.*)$", text, flags=re.M)  # {include} path: a directive
        openers = fences[0::2]
        assert all(openers), f"{path}: a block without a language: {openers}"
        # No indented code blocks: each block says whether it runs.
        bare = re.sub(r"^```.*?^```$", "", text, flags=re.S | re.M)
        assert not re.search(r"\n\n(    \S.*\n)+", bare), path
        runs = blocks(text, "sh") or blocks(text, "bash")
        if runs:  # every command block runs in some test
            assert path in WALKTHROUGH or path in OWN_TESTS, f"{path}: no test runs its blocks"


def test_guides_run_as_written(tmp_path: Path) -> None:
    script = walkthrough_script()
    assert script.count("\n") >= 20, "the guides lost their walkthrough"
    assert (ROOT / ".venv" / "bin" / "activate").is_file(), "make setup makes .venv"
    package = small_package(tmp_path, slug="gpt2-train", public=2, hidden=1)
    service = start_service(tmp_path, [package], sandbox="local", workers=("w1",))
    try:
        env = service.env | {"MEMORACE_URL": service.url, "HOME": str(tmp_path / "home")}
        run = subprocess.run(
            ["bash", "-c", "set -euxo pipefail\n" + script], cwd=ROOT, env=env,
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        said = f"stdout:\n{run.stdout[-4000:]}\nstderr:\n{run.stderr[-4000:]}"
        assert run.returncode == 0, said  # set -e: the first failing command ends it
        assert "event: end" in run.stdout, said  # the live events ran to the end
        # Two submissions (curl, then memorace submit), both judged to the end.
        for sub_id in (1, 2):
            sub = service.api("GET", f"/api/v1/submissions/{sub_id}").json()
            assert sub["status"] == "done" and sub["cases_done"] == 3, sub
        assert service.api("GET", "/api/v1/submissions/3").status_code == 404
        assert re.search(r"\bred\b", run.stdout), said  # the leaderboard shows the team
    finally:
        service.stop()


def test_make_run_serves_each_guide(tmp_path: Path) -> None:
    """scripts/serve, what `make run` starts once `make guide` has built the site."""
    with serve_script(tmp_path) as (url, _):
        wait_for(lambda: answers(url), 120, "scripts/serve's API")
        fetch_each_guide(url)
