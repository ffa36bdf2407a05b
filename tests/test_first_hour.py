"""What a new user meets in the first hour: /docs without internet, HEAD on pages, one
page with every leaderboard, and one clear line about the organizer token on a restart.

Pages through the real app in-process (the fixture of tests/test_pages.py); the
bootstrap as the command scripts/serve runs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from sqlalchemy import update

from api.db.models import ApiToken
from api.db.session import session_scope
from api.routes.guide import CSP as GUIDE_CSP
from api.settings import Settings
from tests.conftest import ROOT
from tests.guides import ensure_built
from tests.test_package import make_package
from tests.test_pages import Service, login, service, submit, submitted_id  # noqa: F401


def test_docs_page_works_without_internet(service: Service) -> None:  # noqa: F811
    client = service.client_for(None)
    page = client.get("/docs")
    assert page.status_code == 200 and "SwaggerUIBundle" in page.text
    # Every asset is one of ours: nothing from a CDN (a blank page offline before).
    assets = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert assets and all(a.startswith("/") and not a.startswith("//") for a in assets), assets
    for asset in assets:
        got = client.get(asset)
        assert got.status_code == 200 and len(got.content) > 100, asset
    js = client.get("/docs-assets/swagger-ui-bundle.js")
    assert "javascript" in js.headers["content-type"] and b"SwaggerUIBundle" in js.content
    # The page's inline script carries the nonce its CSP allows; nothing else may run.
    csp = page.headers["content-security-policy"]
    nonce = re.search(r"'nonce-([^']+)'", csp)
    assert nonce and f'<script nonce="{nonce.group(1)}">' in page.text
    assert "unsafe-eval" not in csp and "http" not in csp
    assert client.get("/openapi.json").json()["info"]["title"] == "MemoRace"


def test_head_answers_like_get(service: Service) -> None:  # noqa: F811
    client = service.client_for(None)
    for path in ("/", "/problems", "/leaderboard", "/healthz", "/api/v1/problems", "/docs"):
        got, head = client.get(path), client.head(path)
        assert head.status_code == got.status_code == 200, path
        assert head.content == b"", path
        assert head.headers["content-type"] == got.headers["content-type"], path
    assert client.head("/problems/nope").status_code == 404
    assert client.head("/logout").status_code == 405  # POST only: still not allowed


def test_one_page_shows_every_leaderboard(service: Service) -> None:  # noqa: F811
    anonymous = service.client_for(None)
    page = anonymous.get("/leaderboard")
    assert page.status_code == 200
    assert 'href="/problems/tiny/leaderboard"' in page.text
    assert "No judged submissions yet." in page.text
    assert 'href="/leaderboard"' in anonymous.get("/").text  # in the navigation
    alice = service.client_for("alice")
    sub_id = submitted_id(submit(alice))
    service.judge_all()
    assert alice.get(f"/api/v1/submissions/{sub_id}").json()["status"] == "done"
    page = anonymous.get("/leaderboard").text
    row = re.search(r"<tr>\s*<td[^>]*>1</td>\s*<td>red</td>\s*<td[^>]*>([0-9.]+)</td>", page)
    assert row, page
    own = alice.get("/leaderboard").text
    assert '<tr class="own">' in own  # the viewer's team is marked, as on each board


def _bootstrap(settings: Settings, package: Path, *extra: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORACE_")}
    env["MEMORACE_DATA_DIR"] = str(settings.data_dir)
    cmd = [sys.executable, "-m", "api.bootstrap", "--problems", str(package), *extra]
    run = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return [line for line in run.stdout.splitlines() if "organizer" in line]


def test_restart_says_one_thing_about_the_token(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    package = make_package(tmp_path / "pkg")
    token_file = tmp_path / "admin.token"
    first = _bootstrap(settings, package, "--token-file", str(token_file))
    token = token_file.read_text().strip()
    assert first == [f"organizer 'admin' created; API token (kept in {token_file}): {token}"]
    # A restart: the same token, said once (it used to say "exists already" and then
    # print the token anyway).
    again = _bootstrap(settings, package, "--token-file", str(token_file))
    assert again == [f"organizer 'admin'; API token (kept in {token_file}): {token}"]
    # A token that no longer works is not shown as if it did.
    with session_scope(settings.database_url) as db:
        db.execute(update(ApiToken).values(revoked=True))
    (line,) = _bootstrap(settings, package, "--token-file", str(token_file))
    assert token not in line and "--new-token" in line
    (line,) = _bootstrap(settings, package, "--token-file", str(token_file), "--new-token")
    fresh = token_file.read_text().strip()
    assert fresh != token and line.endswith(fresh) and "new token" in line


def test_the_header_leads_to_the_guides(service: Service) -> None:  # noqa: F811
    """Every page's header links the guides, which the app serves under their own policy
    (the default for answers without one sandboxes the document: no search)."""
    ensure_built()
    client = service.client_for(None)
    page = client.get("/login")
    assert page.status_code == 200 and 'href="/guide/"' in page.text
    guide = client.get("/guide/")
    assert guide.status_code == 200 and "MemoRace guides" in guide.text, guide.text[:300]
    assert guide.headers["content-security-policy"] == GUIDE_CSP
    search = client.get("/guide/search/")
    assert search.status_code == 200 and "searchindex.js" in search.text
    missing = client.get("/guide/no-such-page/")
    assert missing.status_code == 404
