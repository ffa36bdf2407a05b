"""The web pages through the real app (TestClient, SQLite in a temporary data dir):
login, CSRF, who may see what, escaping, live submission pages and the plan picture.

Queue messages are captured instead of sent; judgings run in-process with
worker.judging.run_judging and the local sandbox.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api import queue
from api.actions import admin
from api.actions.imports import run_job
from api.app import create_app
from api.bootstrap import bootstrap
from api.db.session import session_scope
from api.settings import Settings, get_settings
from tests.test_package import make_package
from worker.judging import run_judging

PASSWORD = "correct horse"
HOSTILE = "<script>alert('x')</script>"
# Public case: a valid plan. Hidden case: an overlap, so it has a message to hide.
PLANNER = b"""\
import json, os
case = json.load(open(os.path.join(os.environ["MEMORACE_CASE_DIR"], "case.json")))
b = 0 if case["name"] == "two" else 8
with open(os.path.join(os.environ["MEMORACE_OUT_DIR"], "plan.csv"), "w") as out:
    out.write(f"id,offset\\na,0\\nb,{b}\\n")
"""
STATEMENT = (
    "# Tiny\n\nPlace **every** buffer.\n\n<script>alert('statement')</script>\n\n"
    "[a trap](javascript:alert(1))\n"
)


@dataclass
class Service:
    settings: Settings
    client: TestClient
    judgings: list[int] = field(default_factory=list)
    rescores: list[int] = field(default_factory=list)
    imports: list[int] = field(default_factory=list)

    def client_for(self, username: str | None) -> TestClient:
        """A fresh browser, logged in as `username` (None: anonymous)."""
        client = TestClient(self.client.app)
        if username:
            assert login(client, username).status_code == 303
        return client

    def judge_all(self) -> None:
        while self.judgings:
            assert run_judging(self.settings, self.judgings.pop(0), "test", None) == "final"


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Service]:
    # The dependencies read get_settings(): point it at this test's data dir.
    monkeypatch.setenv("MEMORACE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MEMORACE_SANDBOX", "local")
    for name in ("DATABASE_URL", "BROKER_URL", "SECRET_KEY"):
        monkeypatch.delenv(f"MEMORACE_{name}", raising=False)
    get_settings.cache_clear()
    settings = get_settings()
    package = make_package(tmp_path / "pkg")
    (package / "statement.md").write_text(STATEMENT)
    app = create_app(settings)
    bootstrap(settings, "root", [package])
    with session_scope(settings.database_url) as db:
        for team in ("red", "blue", HOSTILE):
            admin.create_team(db, team, None)
        admin.create_user(db, "alice", PASSWORD, "red", False, None)
        admin.create_user(db, "bob", PASSWORD, "blue", False, None)
        admin.create_user(db, "mallory", PASSWORD, HOSTILE, False, None)
        admin.create_user(db, "boss", PASSWORD, None, True, None)
    svc = Service(settings, TestClient(app))
    monkeypatch.setattr(queue, "enqueue_judging", lambda j, p=0: svc.judgings.append(j))
    monkeypatch.setattr(queue, "enqueue_rescore", lambda v, a: svc.rescores.append(v))
    monkeypatch.setattr(queue, "enqueue_import", svc.imports.append)
    yield svc
    get_settings.cache_clear()


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert found, "the page has no CSRF field"
    return found.group(1)


def login(client: TestClient, username: str, password: str = PASSWORD):
    token = csrf_of(client.get("/login").text)
    form = {"username": username, "password": password, "csrf_token": token}
    return client.post("/login", data=form, follow_redirects=False)


def post(client: TestClient, page: str, url: str, data: dict, **kw):
    """Submit a form the way a browser does: with the CSRF token of the page it is on."""
    token = csrf_of(client.get(page).text)
    return client.post(url, data={**data, "csrf_token": token}, follow_redirects=False, **kw)


def submit(client: TestClient, source: bytes = PLANNER, name: str = "planner.py"):
    files = {"file": (name, source, "text/x-python")}
    return post(client, "/submit", "/submit", {"problem": "tiny"}, files=files)


def submitted_id(response) -> int:
    assert response.status_code == 303, response.text
    return int(response.headers["location"].rsplit("/", 1)[1])


def flash_error(html: str) -> str:
    found = re.search(r'class="flash error"[^>]*>([^<]*)<', html)
    return found.group(1) if found else ""


# --- login and CSRF -----------------------------------------------------------------------


def test_login_success_and_failure(service: Service) -> None:
    client = service.client_for(None)
    bad = login(client, "alice", "wrong password")
    assert bad.status_code == 401
    assert "wrong username or password" in bad.text
    assert login(client, "nobody").status_code == 401
    good = login(client, "alice")
    assert good.status_code == 303 and good.headers["location"] == "/"
    cookie = good.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=lax" in cookie
    page = client.get("/submissions")
    assert page.status_code == 200 and "alice" in page.text and "red" in page.text
    out = post(client, "/submissions", "/logout", {})
    assert out.status_code == 303 and out.headers["location"] == "/login"
    assert client.get("/submissions", follow_redirects=False).status_code == 303


def test_pages_need_login_and_api_stays_json(service: Service) -> None:
    client = service.client_for(None)
    page = client.get("/submissions?limit=5", follow_redirects=False)
    assert page.status_code == 303
    assert page.headers["location"] == "/login?next=/submissions%3Flimit%3D5"
    api = client.get("/api/v1/submissions", headers={"accept": "text/html"})
    assert api.status_code == 401 and api.json()["detail"].startswith("log in")
    # After login the browser lands where it wanted to go, never on another site.
    token = csrf_of(client.get("/login").text)
    form = {"username": "alice", "password": PASSWORD, "csrf_token": token}
    back = client.post("/login", data={**form, "next": "/submit"}, follow_redirects=False)
    assert back.headers["location"] == "/submit"
    elsewhere = service.client_for(None)
    token = csrf_of(elsewhere.get("/login").text)
    form["csrf_token"] = token
    evil = elsewhere.post("/login", data={**form, "next": "//evil.example"}, follow_redirects=False)
    assert evil.headers["location"] == "/"


def test_error_pages_are_html_for_browsers_json_for_api(service: Service) -> None:
    client = service.client_for(None)
    page = client.get("/problems/nope", headers={"accept": "text/html"})
    assert page.status_code == 404
    assert page.headers["content-type"].startswith("text/html")
    assert "no problem &#39;nope&#39;" in page.text
    api = client.get("/api/v1/problems/nope", headers={"accept": "text/html"})
    assert api.status_code == 404 and api.json() == {"detail": "no problem 'nope'"}
    asked = client.get("/problems/nope", headers={"accept": "application/json"})
    assert asked.json() == {"detail": "no problem 'nope'"}


def test_a_crash_is_an_html_page_without_details(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    from api.actions import problems

    def crash(db):
        raise RuntimeError("secret detail")

    monkeypatch.setattr(problems, "all_current", crash)
    client = TestClient(service.client.app, raise_server_exceptions=False)
    page = client.get("/problems", headers={"accept": "text/html"})
    assert page.status_code == 500 and "internal error" in page.text
    assert page.headers["content-type"].startswith("text/html")
    assert "secret detail" not in page.text


def test_csrf_missing_or_wrong_token_is_refused(service: Service) -> None:
    client = service.client_for("alice")
    files = {"file": ("planner.py", PLANNER)}
    for data in ({"problem": "tiny"}, {"problem": "tiny", "csrf_token": "forged"}):
        refused = client.post("/submit", data=data, files=files)
        assert refused.status_code == 403
        assert "security token (CSRF)" in refused.text
    assert service.judgings == []  # nothing was stored or queued
    # A token of another session is no better than none.
    other = service.client_for("bob")
    stolen = csrf_of(other.get("/submit").text)
    refused = client.post("/submit", data={"problem": "tiny", "csrf_token": stolen}, files=files)
    assert refused.status_code == 403
    anon = service.client_for(None)
    assert anon.post("/login", data={"username": "alice", "password": PASSWORD}).status_code == 403
    assert submitted_id(submit(client)) >= 1


# --- submitting and seeing submissions ----------------------------------------------------


def test_submit_form_errors_keep_their_status(service: Service) -> None:
    client = service.client_for("alice")
    wrong_type = submit(client, name="planner.rb")
    assert wrong_type.status_code == 415
    assert "unsupported file type" in flash_error(wrong_type.text)
    empty = submit(client, source=b"")
    assert empty.status_code == 400 and "empty" in flash_error(empty.text)
    files = {"file": ("planner.py", PLANNER)}
    unknown = post(client, "/submit", "/submit", {"problem": "nope"}, files=files)
    assert unknown.status_code == 404 and "no problem" in flash_error(unknown.text)
    no_team = service.client_for("boss")
    assert "belongs to no team" in flash_error(submit(no_team).text)
    assert service.judgings == []


def test_live_page_while_queued(service: Service) -> None:
    client = service.client_for("alice")
    sub_id = submitted_id(submit(client))
    assert len(service.judgings) == 1
    page = client.get(f"/submissions/{sub_id}")
    assert "submitted, but no worker is running now" in page.text  # none runs here
    assert "position 1 in the queue" in page.text
    # The live script runs under the page's CSP nonce; nothing else may run.
    nonce = re.search(r"<script nonce=\"([^\"]+)\">", page.text).group(1)
    assert f"'nonce-{nonce}'" in page.headers["content-security-policy"]
    assert f"/api/v1/submissions/{sub_id}/events" in page.text
    assert '<meta http-equiv="refresh"' in page.text  # the no-script fallback
    fragment = client.get(f"/submissions/{sub_id}/live")
    assert "queued" in fragment.text and "<html" not in fragment.text
    listing = client.get("/submissions").text
    assert f'href="/submissions/{sub_id}"' in listing and "queued" in listing
    again = submit(client)  # identical bytes: the earlier submission, nothing queued
    assert submitted_id(again) == sub_id and len(service.judgings) == 1


def test_other_teams_submission_is_not_found(service: Service) -> None:
    sub_id = submitted_id(submit(service.client_for("alice")))
    service.judge_all()
    bob = service.client_for("bob")
    for url in (
        f"/submissions/{sub_id}",
        f"/submissions/{sub_id}/live",
        f"/submissions/{sub_id}?case=one",
    ):
        response = bob.get(url)
        assert response.status_code == 404, url
        assert "planner.py" not in response.text
    assert f"/submissions/{sub_id}" not in bob.get("/submissions").text
    assert service.client_for("boss").get(f"/submissions/{sub_id}").status_code == 200


def test_judged_page_hides_hidden_case_details(service: Service) -> None:
    alice = service.client_for("alice")
    sub_id = submitted_id(submit(alice))
    service.judge_all()
    page = alice.get(f"/submissions/{sub_id}").text
    assert "done" in page and 'getElementById("live")' not in page  # judged: no live script
    assert "INVALID_PLAN" in page and "OK" in page  # both verdicts show
    assert "overlap" not in page  # the hidden case's message does not
    hidden_row = re.search(r"<tr>\s*<td>two</td>.*?</tr>", page, re.S).group(0)
    assert "B<" not in hidden_row and "0.0000" not in hidden_row  # no peak, bound, score
    assert "?case=two" not in page
    assert alice.get(f"/submissions/{sub_id}?case=two").status_code == 404
    assert "overlap" not in alice.get(f"/submissions/{sub_id}/live").text
    boss = service.client_for("boss").get(f"/submissions/{sub_id}").text
    assert "buffers a and b overlap" in boss and "?case=two" in boss


def test_plan_picture_of_a_stored_plan(service: Service) -> None:
    alice = service.client_for("alice")
    sub_id = submitted_id(submit(alice))
    service.judge_all()
    page = alice.get(f"/submissions/{sub_id}?case=one")
    assert page.status_code == 200
    svg = re.search(r"<svg.*?</svg>", page.text, re.S).group(0)
    assert 'class="mark peak"' in svg and 'class="mark lower-bound"' in svg
    assert svg.count("<rect") >= 3  # frame, legend swatch, two buffers
    assert "a: bytes [0, 8)" in svg and "b: bytes [8, 16)" in svg
    # An organizer may look at a hidden case's (overlapping) plan too.
    hidden = service.client_for("boss").get(f"/submissions/{sub_id}?case=two")
    assert hidden.status_code == 200 and "<svg" in hidden.text
    assert alice.get(f"/submissions/{sub_id}?case=nope").status_code == 404


def test_events_stream_is_authenticated_by_the_session(service: Service) -> None:
    alice = service.client_for("alice")
    sub_id = submitted_id(submit(alice))
    service.judge_all()
    events = alice.get(f"/api/v1/submissions/{sub_id}/events")
    assert events.status_code == 200 and "event: end" in events.text
    assert service.client_for("bob").get(f"/api/v1/submissions/{sub_id}/events").status_code == 404


# --- public pages and escaping ------------------------------------------------------------


def test_problem_page_renders_markdown_without_raw_html(service: Service) -> None:
    page = service.client_for(None).get("/problems/tiny").text
    assert "<h1>Tiny</h1>" in page and "<strong>every</strong>" in page
    assert "<script>alert" not in page and "&lt;script&gt;alert" in page
    assert 'href="javascript' not in page
    assert 'href="/api/v1/problems/tiny/cases/one"' in page
    assert "/cases/two" not in page  # hidden cases cannot be downloaded
    listing = service.client_for(None).get("/").text
    assert 'href="/problems/tiny"' in listing


def test_hostile_team_name_is_escaped(service: Service) -> None:
    mallory = service.client_for("mallory")
    sub_id = submitted_id(submit(mallory))
    service.judge_all()
    escaped = "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"
    pages = [
        mallory.get(f"/submissions/{sub_id}").text,
        mallory.get("/problems/tiny/leaderboard").text,
        service.client_for("boss").get("/admin/accounts").text,
    ]
    for page in pages:
        assert escaped in page
        assert HOSTILE not in page


# --- organizers ---------------------------------------------------------------------------

ADMIN_PAGES = (
    "/admin",
    "/admin/problems",
    "/admin/problems/tiny",
    "/admin/accounts",
    "/admin/judging",
    "/admin/audit",
)


def test_admin_pages_are_forbidden_to_contestants(service: Service) -> None:
    alice = service.client_for("alice")
    for url in ADMIN_PAGES:
        page = alice.get(url)
        assert page.status_code == 403, url
        assert "organizer" in page.text
    refused = post(alice, "/submit", "/admin/teams", {"name": "sneaky"})
    assert refused.status_code == 403
    anon = service.client_for(None)
    for url in ADMIN_PAGES:
        assert anon.get(url, follow_redirects=False).status_code == 303
    boss = service.client_for("boss")
    for url in ADMIN_PAGES:
        assert boss.get(url).status_code == 200, url


def test_admin_accounts_and_token_shown_once(service: Service) -> None:
    boss = service.client_for("boss")
    page = "/admin/accounts"
    made = post(boss, page, "/admin/teams", {"name": "green"})
    assert made.status_code == 303 and "team &#39;green&#39; created" in boss.get(page).text
    twice = post(boss, page, "/admin/teams", {"name": "green"})
    assert twice.status_code == 409 and "exists already" in flash_error(twice.text)
    user = {"username": "gina", "password": "long enough", "team": "green"}
    assert post(boss, page, "/admin/users", user).status_code == 303
    assert login(service.client_for(None), "gina", "long enough").status_code == 303
    shown = post(boss, page, "/admin/tokens", {"username": "gina", "name": "laptop"})
    token = re.search(r'<pre class="log" id="new-token">([^<]+)</pre>', shown.text).group(1)
    assert shown.headers["cache-control"] == "no-store"
    me = boss.get("/api/v1/me", headers={"authorization": f"Bearer {token}"}).json()
    assert me["username"] == "gina" and me["team"] == "green"
    assert token not in boss.get(page).text


def test_admin_judging_actions(service: Service) -> None:
    sub_id = submitted_id(submit(service.client_for("alice")))
    service.judge_all()
    boss = service.client_for("boss")
    rejudged = post(boss, "/admin/judging", "/admin/rejudge", {"submission_id": str(sub_id)})
    assert rejudged.status_code == 303 and len(service.judgings) == 1
    service.judge_all()
    for target in ({"team": "red"}, {"problem": "tiny"}):
        post(boss, "/admin/judging", "/admin/rejudge", target)
    assert len(service.judgings) == 2
    nothing = post(boss, "/admin/judging", "/admin/rejudge", {})
    assert nothing.status_code == 400 and "say which submissions" in nothing.text
    weights = post(boss, "/admin/problems/tiny", "/admin/problems/tiny/weights", {"w:one": "3"})
    assert weights.status_code == 303
    assert "3" in boss.get("/admin/problems/tiny").text
    bad = post(boss, "/admin/problems/tiny", "/admin/problems/tiny/weights", {"w:one": "-1"})
    assert bad.status_code == 400
    rescore = post(boss, "/admin/problems", "/admin/problems/tiny/rescore", {})
    assert rescore.status_code == 303 and len(service.rescores) == 1
    dq = {"submission_id": str(sub_id), "reason": "copied"}
    assert post(boss, "/admin/judging", "/admin/disqualify", dq).status_code == 303
    assert post(boss, "/admin/judging", "/admin/disqualify", {"team": "blue"}).status_code == 303
    log = boss.get("/admin/audit").text
    for action in ("rejudge", "set_weight", "rescore", "disqualify"):
        assert f"<td>{action}</td>" in log


def test_admin_contest_window_and_reveal(service: Service) -> None:
    boss = service.client_for("boss")
    form = {
        "title": "Spring round",
        "start_at": "2020-01-01T00:00",
        "end_at": "2020-01-02T00:00",
        "freeze_at": "",
        "hidden_revealed": "1",
    }
    assert post(boss, "/admin", "/admin/contest", form).status_code == 303
    assert "Spring round" in service.client_for(None).get("/").text
    over = submit(service.client_for("alice"))
    assert over.status_code == 403 and "the contest ended" in flash_error(over.text)
    backwards = {**form, "end_at": "2019-01-01T00:00"}
    refused = post(boss, "/admin", "/admin/contest", backwards)
    assert refused.status_code == 400 and "must end after it starts" in refused.text
    garbage = post(boss, "/admin", "/admin/contest", {**form, "start_at": "soon"})
    assert garbage.status_code == 400


def test_admin_imports_a_package_upload(service: Service, tmp_path: Path) -> None:
    import shutil

    package = make_package(tmp_path / "v2")
    (package / "statement.md").write_text("# Tiny, second edition\n")
    archive = shutil.make_archive(str(tmp_path / "tiny"), "zip", package.parent, "tiny")
    boss = service.client_for("boss")
    files = {"file": ("tiny.zip", Path(archive).read_bytes(), "application/zip")}
    done = post(boss, "/admin/problems", "/admin/problems", {}, files=files)
    assert done.status_code == 303
    assert "queued" in boss.get("/admin/problems").text
    run_job(service.settings, service.imports.pop())  # as a worker would
    assert "is at version 2" in boss.get("/admin/problems").text
    assert "second edition" in boss.get("/problems/tiny").text
    files = {"file": ("notes.txt", b"hello", "text/plain")}
    wrong = post(boss, "/admin/problems", "/admin/problems", {}, files=files)
    assert wrong.status_code == 400 and ".zip or .tar.gz" in flash_error(wrong.text)
