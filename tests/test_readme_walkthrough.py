"""The README's walkthrough runs as written: every ```sh block, in order, in one bash
from the repository root, against a real service (uvicorn and a Celery worker on the
embedded defaults that `make run` uses). Blocks that are not meant to run (the
`make` commands, synopses, the config file) are ```text; the ```bash blocks are the
compose walkthrough, run by tests/test_compose_stack.py.

The service's gpt2-train is its three smallest cases, so that the judgings the
README starts take seconds; everything else is as a new user has it.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.conftest import ROOT
from tests.service import small_package, start_service

README = ROOT / "README.md"


def sh_blocks(text: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```$", text, flags=re.S | re.M)


def test_readme_marks_every_block() -> None:
    text = README.read_text()
    fences = re.findall(r"^```(\w*)$", text, flags=re.M)
    openers = fences[0::2]
    assert openers and all(lang in ("sh", "bash", "text") for lang in openers), openers
    # No indented code blocks: each block says whether it runs.
    assert not re.search(r"\n\n(    \S.*\n)+", re.sub(r"^```.*?^```$", "", text, flags=re.S | re.M))


def test_readme_walkthrough_runs_as_written(tmp_path: Path) -> None:
    blocks = sh_blocks(README.read_text())
    assert len(blocks) >= 3, "the README lost its walkthrough"
    assert (ROOT / ".venv" / "bin" / "activate").is_file(), "make setup makes .venv"
    package = small_package(tmp_path, slug="gpt2-train", public=2, hidden=1)
    service = start_service(tmp_path, [package], sandbox="local", workers=("w1",))
    try:
        env = service.env | {"MEMORACE_URL": service.url, "HOME": str(tmp_path / "home")}
        script = "set -euxo pipefail\n" + "\n".join(blocks)
        run = subprocess.run(
            ["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
            timeout=600, check=False,
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
