"""The guides' command blocks and pages, for the tests that run or fetch them.

Every fenced block of README.md and docs/ names its language. `sh` blocks run: those of
WALKTHROUGH's files in that order, in one bash against a real service
(tests/test_guide_walkthrough.py), those of OWN_TESTS' files in the test named there;
`bash` blocks are the compose walkthrough (tests/test_compose_stack.py); any other
language (text, toml, yaml, json ...) never runs.
"""

from __future__ import annotations

import fcntl
import re
import subprocess
import sys
from pathlib import Path

import httpx

from tests.conftest import ROOT

DOCS = ROOT / "docs"
SITE = ROOT / "api" / "guide"
# The organizer makes the team, user and token the contestant's blocks use.
WALKTHROUGH = [ROOT / "README.md"] + [
    DOCS / page for page in ("organizer/index.md", "contestant/index.md", "author/index.md",
                             "operator/upgrade.md")
]  # fmt: skip
# Files whose blocks another test runs, as their story needs (a stack, a wiped host).
OWN_TESTS = {
    DOCS / "operator" / "compose.md": "tests/test_compose_stack.py",
    DOCS / "operator" / "backup.md": "tests/test_backup_drill.py",
}
# One page of each guide (the dirhtml build: a folder per page).
PAGES = {
    "contestant/": "Contestant",
    "organizer/": "Organizer",
    "author/": "Problem author",
    "operator/": "Operator",
    "reference/api/": "API reference",
    "architecture/": "Architecture",
}


def guide_files() -> list[Path]:
    pages = (p for p in DOCS.rglob("*.md") if not p.parent.name.startswith("_"))
    return [ROOT / "README.md", *sorted(pages)]


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.S | re.M)


def walkthrough_script() -> str:
    return "\n".join(b for path in WALKTHROUGH for b in blocks(path.read_text(), "sh"))


def ensure_built() -> Path:
    """The built site (make guide), built here when it is not (a bare `pytest`; under a
    lock: test processes side by side build it once)."""
    lock = ROOT / "build" / "guide.lock"
    lock.parent.mkdir(exist_ok=True)
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if not (SITE / "index.html").is_file():
            subprocess.run(
                [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-b",
                 "dirhtml", "-d", str(ROOT / "build" / "guide-doctrees"), str(DOCS), str(SITE)],
                check=True, timeout=600,
            )  # fmt: skip
    return SITE


def fetch_each_guide(base_url: str) -> None:
    """A page of each guide, from the running service, under the guide's own policy."""
    ensure_built()
    for path, title in PAGES.items():
        page = httpx.get(f"{base_url}/guide/{path}", timeout=30)
        assert page.status_code == 200, (path, page.status_code, page.text[:300])
        assert f"<title>{title}" in page.text, (path, page.text[:300])
        policy = page.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "sandbox" not in policy, policy
