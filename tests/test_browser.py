"""The web pages in a real browser against the real service: Debian's chromium (driven
by Playwright, headless) talks to uvicorn; a Celery worker process judges with the local
sandbox over the embedded broker. A contestant logs in through the form, submits a
planner through the form, watches the page update live until it is judged, opens the
plan picture; the screenshot goes to tests/artifacts/browser-submission.png.

Needs /usr/bin/chromium (scripts/prepare test installs it): skipped without it, except in
CI (CI=true), where it fails instead. Playwright's own browser downloads are never used.
"""

from __future__ import annotations

import re
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
    service = start_service(tmp, [small_package(tmp, PROBLEM)], sandbox="local")
    try:
        service.start_worker("w1")
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


def test_submit_and_watch_in_a_browser(stack: Service, page) -> None:
    from playwright.sync_api import expect

    stack.add_team("Lovelace", "ada")
    problems: list[str] = []  # console errors, e.g. a CSP violation or a failed fetch
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on(
        "response", lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 400 else None
    )

    # A page that needs a login leads to the form, and back after it.
    page.goto("/submissions")
    expect(page).to_have_url(re.compile(r"/login\?next=/submissions$"))
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill("ada-password")
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(r"/submissions$"))
    expect(page.locator("header .me")).to_contain_text("ada · Lovelace")

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
