"""Contests keep their secrets from each other (issue 37), over real HTTP on both backends.

Contest 1 `main` (current) and `spring`, made through the organizer API, hold the same
problem version. Team amber is registered in main only, team blue in spring only (made
in main, as an organizer's new team is, then moved). Each submits the same planner and
is judged; main's hidden results are revealed, spring's are not; later spring's start
moves into the future. As blue (token, web session, live stream, command line) nothing
of main may show: naming main answers exactly as a contest that does not exist; nor
may blue see its own hidden results because main, on the same version, revealed.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import threading
import zipfile
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import httpx
import pytest

from tests.service import VENV_BIN, Service, wait_for
from tests.test_hidden_secrecy import HIDDEN, PLANNER, SLUG, secrets_service

A_TEAM, B_TEAM = "amber", "blue"
REFS = ("main", "1")  # main by slug and by id: each must answer as "nosuch" does
HIDDEN_CAPACITY = str(2**40)  # a hidden case's figure: shown only after the reveal


@pytest.fixture(scope="module", params=["embedded", "postgres+redis"])
def service(request, tmp_path_factory):
    with secrets_service(request.param, tmp_path_factory.mktemp("contests")) as svc:
        yield svc


def ok(reply: httpx.Response, *codes: int) -> httpx.Response:
    assert reply.status_code in (codes or (200,)), (reply.request.url, reply.text[:500])
    return reply


def browser(service: Service, username: str) -> httpx.Client:
    """A web session of `username` (logged in through the form, as a browser)."""
    client = httpx.Client(base_url=service.url, timeout=60)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/login").text)
    form = {"username": username, "password": f"{username}-password", "csrf_token": csrf[1]}
    assert client.post("/login", data=form).status_code in (200, 303)
    return client


@pytest.fixture(scope="module")
def world(service: Service):
    api = service.api
    a = service.add_team(A_TEAM, "ann")
    b = service.add_team(B_TEAM, "bob")
    # blue reads main while still registered there: its token is now in the caches.
    assert ok(api("GET", f"/api/v1/leaderboard/{SLUG}", b)).json()["contest"] == "main"
    web = browser(service, "bob")  # ... and its web session keeps main as its choice
    ok(web.get(f"/problems/{SLUG}/leaderboard?contest=main"))
    ok(api("POST", "/api/v1/admin/contests", json={"slug": "spring", "title": "Spring"}), 201)
    ok(api("PUT", f"/api/v1/admin/contests/spring/problems/{SLUG}", json={}))
    ok(api("PUT", f"/api/v1/admin/contests/spring/teams/{B_TEAM}", json={}))
    ok(api("DELETE", f"/api/v1/admin/contests/main/teams/{B_TEAM}"), 204)
    planner = service.data_dir.parent / "planner.py"
    planner.write_text(PLANNER)
    a_sub = service.submit(a, SLUG, planner)["id"]
    b_sub = service.submit(b, SLUG, planner)["id"]  # no contest named: blue's, spring
    full = {s: service.wait_done(service.admin_token, s, timeout=120) for s in (a_sub, b_sub)}
    assert ok(api("GET", f"/api/v1/submissions/{b_sub}", b)).json()["hidden_score"] is None
    ok(api("PUT", "/api/v1/admin/contest?contest=main", json={"hidden_revealed": True}))

    def baselines_revealed() -> list[dict] | None:  # on main's board, as a visitor sees it
        rows = httpx.get(f"{service.url}/api/v1/leaderboard/{SLUG}").json()["baselines"]
        return [r for r in rows if r["hidden_score"] is not None] or None

    wait_for(baselines_revealed, 180, "main's baselines with a hidden score")
    # amber's private question in main (answered to amber alone) and a public one.
    asked = [
        ok(api("POST", "/api/v1/clarifications", a, json={"question": q}), 201).json()["id"]
        for q in ("PRIVATE-Q-amber-91", "PUBLIC-Q-amber-92")
    ]
    for message_id, answer, audience in zip(
        asked, ("PRIVATE-A-amber-93", "PUBLIC-A-main-94"), ("team", "all"), strict=True
    ):
        body = {"answer": answer, "audience": audience}
        ok(api("POST", f"/api/v1/admin/clarifications/{message_id}/answer", json=body))
    ok(api("POST", "/api/v1/admin/announcements?contest=main", json={"text": "MAIN-NEWS-95"}), 201)
    a_secrets = {"MARKER-sec", "amber", "PRIVATE-", "PUBLIC-", "MAIN-NEWS", HIDDEN_CAPACITY}
    a_secrets |= {full[a_sub]["results"][1]["plan_digest"], str(full[a_sub]["hidden_score"])}
    ids = {"a": a, "b": b, "a_sub": a_sub, "b_sub": b_sub}
    return SimpleNamespace(**ids, full=full, secrets=a_secrets, web=web)


def same_404(reply: httpx.Response, ref: str, nosuch: httpx.Response) -> None:
    """As a contest that does not exist: the status and the body, but for the name."""
    assert reply.status_code == 404 == nosuch.status_code, (reply.request.url, reply.text)
    assert reply.text.replace(f"'{ref}'", "'?'") == nosuch.text.replace("'nosuch'", "'?'")


API_READS = [
    "/api/v1/problems",
    f"/api/v1/problems/{SLUG}",
    f"/api/v1/problems/{SLUG}/statement",
    f"/api/v1/problems/{SLUG}/cases/pub",
    f"/api/v1/leaderboard/{SLUG}",
    f"/api/v1/problems/{SLUG}/history.svg",
    f"/api/v1/problems/{SLUG}/starter-kit",
    f"/api/v1/problems/{SLUG}/final",
    "/api/v1/clarifications",
    "/api/v1/announcements",
    "/api/v1/exports/mine",
    "/api/v1/exports/clarifications",
]
PAGES = ["/problems", f"/problems/{SLUG}", f"/problems/{SLUG}/leaderboard", "/leaderboard",
         "/clarifications", "/submit"]  # fmt: skip


def with_contest(path: str, ref: str) -> str:
    return f"{path}{'&' if '?' in path else '?'}contest={ref}"


def test_naming_main_answers_as_no_contest(service: Service, world) -> None:
    b = world.b
    for path in API_READS:
        nosuch = service.api("GET", with_contest(path, "nosuch"), b)
        for ref in REFS:
            same_404(service.api("GET", with_contest(path, ref), b), ref, nosuch)
    writes = [  # writes that name main: refused as for a contest that does not exist
        ("PUT", f"/api/v1/problems/{SLUG}/final?contest=", {"json": {"submissions": []}}),
        ("POST", "/api/v1/clarifications?contest=", {"json": {"question": "hello?"}}),
    ]
    for method, path, kwargs in writes:
        nosuch = service.api(method, path + "nosuch", b, **kwargs)
        for ref in REFS:
            same_404(service.api(method, path + ref, b, **kwargs), ref, nosuch)
    question = {"question": "hi", "contest": "main"}
    assert service.api("POST", "/api/v1/clarifications", b, json=question).status_code == 404
    planner = service.data_dir.parent / "planner.py"
    with planner.open("rb") as fh:
        files, form = {"file": ("p.py", fh)}, {"problem": SLUG, "contest": "1"}
        sent = service.api("POST", "/api/v1/submissions", b, data=form, files=files)
    assert sent.status_code == 404, sent.text
    for path in PAGES:  # the web session: as for "nosuch" (404; the submit form: blue's
        nosuch = world.web.get(with_contest(path, "nosuch")).status_code  # own contest)
        assert nosuch == (200 if path == "/submit" else 404), path
        for ref in REFS:
            page = world.web.get(with_contest(path, ref))
            assert page.status_code == nosuch, (path, ref, page.text[:300])
            assert not any(s in page.text for s in world.secrets), (path, ref)
    contests = ok(service.api("GET", "/api/v1/contests", b)).json()
    assert [c["slug"] for c in contests] == ["spring"]
    assert "contest=main" not in world.web.get("/problems").text


def test_entering_a_closed_contest_answers_as_no_contest(service: Service, world) -> None:
    """POST /api/v1/contests/REF/entry: main's sign-up is closed (the default); a team
    that may not see main must not learn that it exists (403 where "nosuch" is 404)."""
    for token, refs in ((world.b, REFS), (world.a, ("spring", "2"))):
        nosuch = service.api("POST", "/api/v1/contests/nosuch/entry", token)
        for ref in refs:
            same_404(service.api("POST", f"/api/v1/contests/{ref}/entry", token), ref, nosuch)


def test_blue_reads_nothing_of_amber_or_main(service: Service, world) -> None:
    b, a_sub = world.b, world.a_sub
    for path in (f"/api/v1/submissions/{a_sub}", f"/api/v1/submissions/{a_sub}/comparison",
                 f"/api/v1/submissions/{a_sub}/events"):  # fmt: skip
        assert service.api("GET", path, b).status_code == 404, path
    for path in (f"/submissions/{a_sub}", f"/submissions/{a_sub}/live"):
        assert world.web.get(path).status_code == 404, path
    picks = {"submissions": [a_sub]}
    assert service.api("PUT", f"/api/v1/problems/{SLUG}/final", b, json=picks).status_code >= 400
    texts = [service.api("GET", path, b).text for path in API_READS]
    texts += [service.api("GET", with_contest(p, "spring"), b).text for p in API_READS]
    texts += [world.web.get(path).text for path in (*PAGES, "/submissions")]
    for text in texts:
        for secret in world.secrets:
            assert secret not in text, secret


class Stream:
    """GET /api/v1/contest/events read on a thread: the messages heard so far."""

    def __init__(self, service: Service, token: str) -> None:
        self.heard: list[str] = []
        self.open = threading.Event()
        self.stop = False
        args = (f"{service.url}/api/v1/contest/events", {"Authorization": f"Bearer {token}"})
        threading.Thread(target=self._read, args=args, daemon=True).start()
        assert self.open.wait(30), "the stream did not open"

    def _read(self, url: str, headers: dict) -> None:
        with (
            contextlib.suppress(httpx.HTTPError),  # the service stopped under it
            httpx.stream("GET", url, headers=headers, timeout=120) as reply,
        ):
            assert reply.status_code == 200
            self.open.set()
            for line in reply.iter_lines():
                if line.startswith("data: "):
                    self.heard.append(line[6:])
                if self.stop:
                    return


def test_blue_hears_only_springs_announcements(service: Service, world) -> None:
    blue, amber = Stream(service, world.b), Stream(service, world.a)
    for contest, text in (("main", "MAIN-LIVE-71"), ("spring", "SPRING-LIVE-72")):
        url = f"/api/v1/admin/announcements?contest={contest}"
        ok(service.api("POST", url, json={"text": text}), 201)
    wait_for(lambda: any("SPRING-LIVE-72" in m for m in blue.heard), 30, "spring's news")
    wait_for(lambda: any("MAIN-LIVE-71" in m for m in amber.heard), 30, "main's news")
    blue.stop = amber.stop = True
    assert not any("MAIN-LIVE" in m for m in blue.heard), blue.heard
    assert not any("SPRING-LIVE" in m for m in amber.heard), amber.heard
    listed = ok(service.api("GET", "/api/v1/announcements", world.b)).text
    assert "SPRING-LIVE-72" in listed and "MAIN-" not in listed


def test_own_hidden_results_wait_for_springs_reveal(service: Service, world) -> None:
    """main revealed the same version's hidden cases; spring did not."""
    b, b_sub = world.b, world.b_sub
    full = world.full[b_sub]
    assert full["hidden_score"] is not None  # the organizer's view
    mine = ok(service.api("GET", f"/api/v1/submissions/{b_sub}", b)).json()
    listed = ok(service.api("GET", "/api/v1/submissions", b)).json()
    assert [s["id"] for s in listed] == [b_sub]
    for body in (mine, *listed):
        assert body["hidden_score"] is None
    for r in mine["results"]:
        assert r["withheld"] == (r["case"] in HIDDEN) and (r["case"] not in HIDDEN or not r["log"])
    board = ok(service.api("GET", f"/api/v1/leaderboard/{SLUG}", b)).json()
    assert board["contest"] == "spring" and not board["hidden_revealed"]
    assert [r["team"] for r in board["rows"]] == [B_TEAM]
    assert all(r["hidden_score"] is None for r in board["rows"] + board["baselines"]), board
    assert board["baselines"], "spring shows the shared baselines"
    exported = ok(service.api("GET", "/api/v1/exports/mine?format=json", b)).json()
    assert exported and all(row["hidden_score"] is None for row in exported)
    assert all(row["withheld"] for row in exported if row["split"] == "hidden")
    chart = f"/api/v1/problems/{SLUG}/history.svg?score=hidden_score"
    assert service.api("GET", chart, b).status_code == 403
    problem = ok(service.api("GET", f"/api/v1/problems/{SLUG}", b)).json()
    assert all(c["capacity"] is None for c in problem["case_list"] if c["split"] == "hidden")
    secrets = [f"MARKER-{c}" for c in HIDDEN] + [HIDDEN_CAPACITY, str(full["hidden_score"])]
    secrets += [r["plan_digest"] for r in full["results"] if r["split"] == "hidden"]
    texts = [service.api("GET", p, b).text for p in (
        f"/api/v1/submissions/{b_sub}", f"/api/v1/submissions/{b_sub}/comparison",
        f"/api/v1/submissions/{b_sub}/events", f"/api/v1/problems/{SLUG}",
        "/api/v1/exports/mine?format=csv", f"/problems/{SLUG}", f"/problems/{SLUG}/leaderboard",
    )]  # fmt: skip
    texts += [world.web.get(p).text for p in (f"/submissions/{b_sub}", f"/problems/{SLUG}")]
    texts.append(cli(service, b, "status", str(b_sub)).stdout)
    for text in texts:
        assert not any(s in text for s in secrets), [s for s in secrets if s in text]


def test_hot_path_gives_blue_springs_board(service: Service, world) -> None:
    """main's board and page are kept for the current contest's readers; blue's token
    without a query must still get spring's, right after amber and a visitor."""
    a, b = world.a, world.b
    for _ in range(4):
        for token in (a, None):  # main's, and kept (main revealed: the hidden figures)
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            reply = httpx.get(f"{service.url}/api/v1/leaderboard/{SLUG}", headers=headers)
            assert reply.json()["contest"] == "main"
            page = httpx.get(f"{service.url}/problems/{SLUG}", headers=headers).text
            assert HIDDEN_CAPACITY in page
        board = ok(service.api("GET", f"/api/v1/leaderboard/{SLUG}", b)).json()
        assert board["contest"] == "spring" and A_TEAM not in json.dumps(board), board
        page = ok(service.api("GET", f"/problems/{SLUG}", b)).text
        assert HIDDEN_CAPACITY not in page and "Secrets" in page
        listed = ok(service.api("GET", "/api/v1/submissions", b)).json()
        assert [s["id"] for s in listed] == [world.b_sub]


def cli(service: Service, token: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MEMORACE_")}
    environ |= {"MEMORACE_URL": service.url, "MEMORACE_TOKEN": token, "COLUMNS": "200", **env}
    environ["HOME"] = str(service.data_dir.parent)  # no config file of the machine's
    return subprocess.run([str(VENV_BIN / "memorace"), *args], env=environ,
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip


def test_command_line_shows_blue_spring_only(service: Service, world) -> None:
    done = cli(service, world.b, "leaderboard", SLUG)
    assert done.returncode == 0, done.stderr
    assert "spring" in done.stdout and B_TEAM in done.stdout and A_TEAM not in done.stdout
    for ref in REFS:
        done = cli(service, world.b, "leaderboard", SLUG, MEMORACE_CONTEST=ref)
        assert done.returncode != 0, done.stdout
        said = done.stdout + done.stderr
        assert f"no contest '{ref}'" in said and "Traceback" not in said, said
        assert A_TEAM not in said
    listed = cli(service, world.b, "contests")
    assert listed.returncode == 0 and "spring" in listed.stdout and "main" not in listed.stdout


def test_amber_sees_no_spring_and_organizers_see_both(service: Service, world) -> None:
    a, b_sub = world.a, world.b_sub
    for path in API_READS[:8]:
        nosuch = service.api("GET", with_contest(path, "nosuch"), a)
        same_404(service.api("GET", with_contest(path, "spring"), a), "spring", nosuch)
    assert service.api("GET", f"/api/v1/submissions/{b_sub}", a).status_code == 404
    assert [c["slug"] for c in service.api("GET", "/api/v1/contests", a).json()] == ["main"]
    mine = ok(service.api("GET", f"/api/v1/submissions/{world.a_sub}", a)).json()
    assert mine["hidden_score"] == world.full[world.a_sub]["hidden_score"]  # main revealed
    assert B_TEAM not in service.api("GET", f"/api/v1/leaderboard/{SLUG}", a).text
    for ref, team in (("main", A_TEAM), ("1", A_TEAM), ("spring", B_TEAM)):
        board = ok(service.api("GET", f"/api/v1/leaderboard/{SLUG}?contest={ref}")).json()
        assert [r["team"] for r in board["rows"]] == [team]
        assert board["rows"][0]["hidden_score"] is not None  # organizers see everything
    slugs = {c["slug"] for c in ok(service.api("GET", "/api/v1/admin/contests")).json()}
    assert slugs == {"main", "spring"}


def test_spring_before_its_start_is_the_organizers(service: Service, world) -> None:
    """Runs last: spring's start moves a day ahead."""
    b = world.b
    later = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    ok(service.api("PUT", "/api/v1/admin/contest?contest=spring", json={"start_at": later}))
    gated = ["/api/v1/problems", f"/api/v1/problems/{SLUG}", f"/api/v1/leaderboard/{SLUG}",
             f"/api/v1/problems/{SLUG}/starter-kit", f"/api/v1/problems/{SLUG}/history.svg",
             f"/api/v1/problems/{SLUG}/cases/pub"]  # fmt: skip
    for _ in range(3):  # again: nothing kept from before answers
        for path in gated:
            for asked in (path, with_contest(path, "spring")):
                reply = service.api("GET", asked, b)
                assert reply.status_code == 404, (asked, reply.text[:300])
                assert A_TEAM not in reply.text and B_TEAM not in reply.text
            ok(service.api("GET", with_contest(path, "spring")))  # the organizer's
    for path in (f"/problems/{SLUG}", f"/problems/{SLUG}/leaderboard", "/leaderboard"):
        assert world.web.get(path).status_code == 404, path
        assert service.api("GET", path, b).status_code == 404, path
    assert SLUG not in world.web.get("/problems").text.split("</nav>")[-1]
    assert cli(service, b, "leaderboard", SLUG).returncode != 0
    kit = ok(service.api("GET", f"/api/v1/problems/{SLUG}/starter-kit?contest=spring"))
    assert zipfile.ZipFile(io.BytesIO(kit.content)).namelist()


def test_kept_answers_wait_for_a_later_start(service: Service, world) -> None:
    """Runs last: main, started, is read (its board and page are kept for the hot path);
    then its start moves a day ahead and an organizer reads it (allowed). Nobody else may
    get the kept board or page now, a visitor nor amber, with a token or a session."""
    path_board, path_page = f"/api/v1/leaderboard/{SLUG}", f"/problems/{SLUG}"
    for _ in range(2):
        ok(httpx.get(service.url + path_board)), ok(httpx.get(service.url + path_page))
        ok(service.api("GET", path_board, world.a)), ok(service.api("GET", path_page, world.a))
    later = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    ok(service.api("PUT", "/api/v1/admin/contest?contest=main", json={"start_at": later}))
    amber = browser(service, "ann")
    for _ in range(3):
        ok(service.api("GET", path_board)), ok(service.api("GET", path_page))  # the organizer's
        for path in (path_board, path_page):
            for reply in (httpx.get(service.url + path), service.api("GET", path, world.a),
                          amber.get(path)):  # fmt: skip
                assert reply.status_code == 404, (path, reply.text[:300])
