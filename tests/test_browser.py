"""The web pages in a real browser against the real service: Debian's chromium (driven
by Playwright, headless) talks to uvicorn; a Celery worker process judges with the local
sandbox over the embedded broker. A contestant logs in through the form, submits a
planner through the form, watches the page update live until it is judged, opens the
plan picture; the screenshot goes to tests/artifacts/browser-submission.png. Then the
board with the reference planners' baseline rows and the score-history chart, the
per-case comparison on the submission page and the starter-kit download (screenshots
browser-board.png, browser-compare.png; the kit as browser-starter-kit.zip).

Needs /usr/bin/chromium (scripts/prepare test installs it): skipped without it, except in
CI (CI=true), where it fails instead. Playwright's own browser downloads are never used.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import IN_CI, ROOT
from tests.service import Service, small_package, start_service

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "tests" / "artifacts"
SCREENSHOT = ARTIFACTS / "browser-submission.png"
PROBLEM = "mini-gpt2"
PLANNER = ROOT / "reference_solutions" / "naive.py"
JUDGING_TIMEOUT_MS = 180_000


def need_browser() -> None:
    why = ""
    if not CHROMIUM.exists():
        why = f"{CHROMIUM} is missing (scripts/prepare test installs Debian's chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            why = "the python package playwright is not installed"
    if why and IN_CI:
        pytest.fail(f"CI must run the browser test: {why}")
    if why:
        pytest.skip(why)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    need_browser()
    tmp = tmp_path_factory.mktemp("browser")
    service = start_service(
        tmp, [small_package(tmp, PROBLEM, time_limit_s=4.0)], sandbox="local",
        extra_env={"MEMORACE_BASELINES": "1"}, workers=("w1",),  # the board's reference rows
    )  # fmt: skip
    try:
        service.add_team("Lovelace", "ada")  # every test logs in as ada (one may run alone)
        yield service
    finally:
        service.stop()


@pytest.fixture
def page(stack: Service) -> Iterator:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=stack.url)
        page = context.new_page()
        page.set_default_timeout(30_000)
        try:
            yield page
        finally:
            context.close()
            browser.close()


def watch(page) -> list[str]:
    """Console errors (a CSP violation is one), page errors and failed requests."""
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on(
        "response", lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 400 else None
    )
    return problems


def log_in(page) -> None:
    """A page that needs a login leads to the form, and back after it."""
    from playwright.sync_api import expect

    page.goto("/submissions")
    expect(page).to_have_url(re.compile(r"/login\?next=/submissions$"))
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill("ada-password")
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(r"/submissions$"))
    expect(page.locator("header .me")).to_contain_text("ada · Lovelace")


def test_submit_and_watch_in_a_browser(stack: Service, page) -> None:
    from playwright.sync_api import expect

    problems = watch(page)
    log_in(page)

    page.get_by_role("link", name="Submit", exact=True).click()
    page.get_by_label("Problem").select_option(PROBLEM)
    page.get_by_label("Planner file").set_input_files(str(PLANNER))
    page.get_by_role("button", name="Submit").click()
    expect(page).to_have_url(re.compile(r"/submissions/\d+$"))
    expect(page.locator(".flash.ok")).to_contain_text("submitted")

    # No reload from here: the page's script follows the events until the end.
    expect(page.locator("#status")).to_have_text("done", timeout=JUDGING_TIMEOUT_MS)
    rows = page.locator("table.cases tbody tr")
    expect(rows).to_have_count(3)
    expect(page.locator("table.cases .verdict.OK")).to_have_count(3)
    hidden = rows.filter(has=page.locator(".split.hidden"))
    expect(hidden.locator("td.message")).to_have_text("")
    expect(hidden.get_by_role("link")).to_have_count(0)  # no plan of a hidden case

    page.get_by_role("link", name="plan").first.click()
    expect(page).to_have_url(re.compile(r"\?case=[^&#]+#case$"))
    picture = page.locator("#case svg")
    expect(picture).to_be_visible()
    expect(picture.locator("line.mark.peak")).to_have_count(1)
    expect(picture.locator("line.mark.lower-bound")).to_have_count(1)
    assert picture.locator("g.buffers rect").count() > 10

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT), full_page=True)
    assert SCREENSHOT.stat().st_size > 10_000

    page.goto(f"/problems/{PROBLEM}/leaderboard")
    expect(page.locator("tr.own")).to_contain_text("Lovelace")
    assert problems == [], problems


def test_board_baselines_chart_comparison_and_starter_kit(stack: Service, page) -> None:
    """After the first test (ada's judged submission): what she looks at all contest long."""
    from playwright.sync_api import expect

    problems = watch(page)
    log_in(page)

    # The board: three baseline rows once the worker has judged the references.
    page.goto(f"/problems/{PROBLEM}/leaderboard")
    judged = "tr.baseline:not(:has-text('queued')):not(:has-text('running'))"
    for _ in range(150):
        if page.locator(judged).count() == 3:
            break
        page.wait_for_timeout(2000)
        page.reload()
    expect(page.locator(judged)).to_have_count(3)
    for level in ("naive", "greedy", "strong"):
        expect(page.locator(f"tr.baseline.{level}")).to_contain_text(f"{level} reference")
    expect(page.locator("tr.own")).to_contain_text("Lovelace")
    shown = page.locator("table.board tbody td:nth-child(3)").all_inner_texts()
    scores = [float(s) for s in shown]
    assert scores == sorted(scores, reverse=True), shown  # baselines where they would rank
    chart = page.locator("section.history svg")
    expect(chart).to_have_count(1)  # a contestant: the public scores only
    expect(chart).to_be_visible()
    expect(chart.locator("line.reference")).to_have_count(3)
    expect(chart.locator("g.team.own polyline")).to_have_count(1)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "browser-board.png"), full_page=True)

    # Where the points went: her submission's public cases beside the best of each.
    page.locator("tr.own a").click()
    expect(page).to_have_url(re.compile(r"/submissions/\d+$"))
    compare = page.locator("#compare table.compare tbody tr")
    expect(compare).to_have_count(2)  # the two public cases, none hidden before the reveal
    expect(page.locator("#compare .split.hidden")).to_have_count(0)
    page.locator("#compare").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "browser-compare.png"), full_page=True)

    # The starter kit, from the problem page.
    page.goto(f"/problems/{PROBLEM}")
    with page.expect_download() as download:
        page.get_by_role("link", name="Starter kit (zip)").click()
    kit = ARTIFACTS / "browser-starter-kit.zip"
    download.value.save_as(kit)
    with zipfile.ZipFile(kit) as zf:
        names = zf.namelist()
    assert any(n.endswith("/planner.py") for n in names), names
    assert any(n.endswith("/README.md") for n in names), names
    assert problems == [], problems


def test_an_online_allocator_shows_its_time_per_request(
    stack: Service, page, tmp_path: Path
) -> None:
    """An online problem (imported now): its type's rules from the problem page, then an
    allocator submitted through the form; the judged page shows µs/request (mean and
    p99) for the public cases and nothing of the hidden one's, and the picture of a
    public case's transcript."""
    from playwright.sync_api import expect

    from tests.online_cases import FIRST_FIT_PY
    from tests.test_online_service import SLUG, online_package

    job = stack.import_package(online_package(tmp_path / "pkg"))
    assert job["status"] == "done", job
    allocator = tmp_path / "first_fit.py"
    allocator.write_text(FIRST_FIT_PY)
    problems = watch(page)
    log_in(page)

    page.goto(f"/problems/{SLUG}")
    page.get_by_role("link", name="Rules of the online type").click()
    expect(page).to_have_url(re.compile(r"/types/online$"))
    expect(
        page.get_by_role("heading", name="Protocol (the allocator's stdin and stdout)")
    ).to_be_visible()

    page.goto(f"/submit?problem={SLUG}")
    page.get_by_label("Planner file").set_input_files(str(allocator))
    page.get_by_role("button", name="Submit").click()
    expect(page).to_have_url(re.compile(r"/submissions/\d+$"))
    expect(page.locator("#status")).to_have_text("done", timeout=JUDGING_TIMEOUT_MS)
    expect(page.locator("table.cases .verdict.OK")).to_have_count(3)
    expect(page.locator("table.cases th", has_text="µs/request (p99)")).to_have_count(1)
    rows = page.locator("table.cases tbody tr")
    public = rows.filter(has=page.locator(".split.public")).locator("td.request-us")
    expect(public).to_have_count(2)
    for text in public.all_inner_texts():
        assert re.fullmatch(r"\d+\.\d \(\d+\.\d\)", text.strip()), text
    hidden = rows.filter(has=page.locator(".split.hidden")).locator("td.request-us")
    expect(hidden).to_have_text("")
    page.get_by_role("link", name="plan").first.click()  # the transcript, drawn as a plan
    picture = page.locator("#case svg")
    expect(picture).to_be_visible()
    expect(picture.locator("line.mark.peak")).to_have_count(1)
    assert picture.locator("g.buffers rect").count() > 10
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "browser-online.png"), full_page=True)
    assert problems == [], problems


def test_questions_answers_and_announcements_arrive_live(stack: Service, page) -> None:
    """A question asked through the Clarifications page; the jury's private answer and
    an announcement show on the open page as they are made, with no reload."""
    from playwright.sync_api import expect

    problems = watch(page)
    log_in(page)
    page.get_by_role("link", name="Clarifications").click()
    page.get_by_label("Your question").fill("may the planner print to stderr?")
    page.get_by_role("button", name="Ask the jury").click()
    expect(page.locator("article.message")).to_contain_text("may the planner print to stderr?")
    qid = stack.api("GET", "/api/v1/admin/clarifications").json()[0]["id"]
    page.goto("/problems")  # any page listens
    private = {"answer": "yes, stderr goes to the log", "audience": "team"}
    reply = stack.api("POST", f"/api/v1/admin/clarifications/{qid}/answer", json=private)
    assert reply.status_code == 200, reply.text
    notices = page.locator("#notices .notice")
    expect(notices.first).to_contain_text("yes, stderr goes to the log", timeout=10_000)
    stack.api("POST", "/api/v1/admin/announcements", json={"text": "the freeze starts at 17:00"})
    expect(notices.first).to_contain_text("Announcement: the freeze starts at 17:00")
    expect(notices).to_have_count(2)
    notices.first.get_by_role("link").click()
    expect(page).to_have_url(re.compile(r"/clarifications#m\d+$"))
    expect(page.locator("section").first).to_contain_text("the freeze starts at 17:00")
    assert problems == [], problems
