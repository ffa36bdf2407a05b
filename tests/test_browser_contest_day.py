"""A whole contest day with two contests, in a real browser (issue 37): Debian's chromium
(Playwright, headless) against the real service, as tests/test_browser.py. Three people,
each in a browser context of their own: the organizer, a newcomer who signs up for the
new contest `spring`, and the team of the contest `main` (the current one).

The organizer makes `spring` and puts the problem in it, asks for approval of sign-ups;
the newcomer signs up, cannot log in until approved, then sees spring and only spring.
Both teams submit through the form; each asks a question (one answered privately, one
to every team of main); an announcement in spring arrives live on the newcomer's open
page and not on main's; main freezes and spring reveals, each board as its contest says.
Screenshots: tests/artifacts/contest-day-*.png.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from tests.service import Service, small_package, start_service
from tests.test_browser import (
    ARTIFACTS,
    CHROMIUM,
    JUDGING_TIMEOUT_MS,
    PLANNER,
    PROBLEM,
    need_browser,
    watch,
)

LIVE_MS = 15_000  # a live notice on a loaded machine
BOARD = f"/problems/{PROBLEM}/leaderboard"


@pytest.fixture(scope="module")
def day(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    need_browser()
    tmp = tmp_path_factory.mktemp("contest-day")
    service = start_service(
        tmp, [small_package(tmp, PROBLEM, time_limit_s=4.0)], sandbox="local", workers=("w1",)
    )
    try:
        service.add_team("Lovelace", "ada")  # main's team (a new team joins the current contest)
        # Set-up with no page: the bootstrap makes only the organizer's API token, so the
        # organizer who logs in to the pages is made through the API.
        body = {"username": "jury", "password": "jury-password", "admin": True}
        assert service.api("POST", "/api/v1/admin/users", json=body).status_code == 201
        yield service
    finally:
        service.stop()


@pytest.fixture
def browser(day: Service) -> Iterator:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        found = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            yield found
        finally:
            found.close()


def person(browser, day: Service):
    """A page in a fresh browser context (its own cookies: its own login), watched."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=day.url)
    page = context.new_page()
    page.set_default_timeout(30_000)
    return page, watch(page)


def log_in(page, username: str, refused: str = "") -> None:
    from playwright.sync_api import expect

    page.goto("/login")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(f"{username}-password")
    page.get_by_role("button", name="Log in").click()
    if refused:
        expect(page.locator(".flash.error")).to_contain_text(refused)
    else:
        expect(page.locator("header .me")).to_contain_text(username)


def flash(page, text: str) -> None:
    from playwright.sync_api import expect

    expect(page.locator(".flash.ok")).to_contain_text(text)


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"contest-day-{name}.png"), full_page=True)


def submit(page) -> None:
    """Through the form; the page follows its judging live until it is done."""
    from playwright.sync_api import expect

    page.goto("/submit")
    page.get_by_label("Problem").select_option(PROBLEM)
    page.get_by_label("Planner file").set_input_files(str(PLANNER))
    page.get_by_role("button", name="Submit").click()
    expect(page).to_have_url(re.compile(r"/submissions/\d+$"))


def wait_judged(page) -> None:
    from playwright.sync_api import expect

    expect(page.locator("#status")).to_have_text("done", timeout=JUDGING_TIMEOUT_MS)
    expect(page.locator("table.cases .verdict.OK")).to_have_count(3)


def ask(page, question: str) -> None:
    from playwright.sync_api import expect

    page.goto("/clarifications")
    page.get_by_label("Your question").fill(question)
    page.get_by_role("button", name="Ask the jury").click()
    flash(page, "sent to the jury")
    expect(page.locator("article.message", has_text=question)).to_contain_text("Waiting")


def answer(jury, contest: str, question: str, text: str, audience: str) -> None:
    jury.goto(f"/clarifications?contest={contest}")
    asked = jury.locator("article.message", has_text=question)
    asked.get_by_label("Answer").fill(text)
    asked.locator("select[name=audience]").select_option(audience)
    asked.get_by_role("button", name="Answer").click()
    flash(jury, f"answered to {audience}")


def contest_settings(jury, contest: str, **change: str) -> None:
    """The Contest form of /admin?contest=SLUG: `change` maps a field's label to a value
    (a select's option, a text), or to "check"."""
    from playwright.sync_api import expect

    jury.goto(f"/admin?contest={contest}")
    expect(jury.get_by_role("heading", name=re.compile(f"^Contest {contest}"))).to_be_visible()
    for label, value in change.items():
        field = jury.get_by_label(label)
        if value == "check":
            field.check()
        elif field.evaluate("e => e.tagName") == "SELECT":
            field.select_option(value)
        else:
            field.fill(value)
    jury.get_by_role("button", name="Save").click()
    flash(jury, f"settings of contest '{contest}' saved")


def test_a_contest_day_with_two_contests(day: Service, browser) -> None:
    from playwright.sync_api import expect

    jury, jury_problems = person(browser, day)
    grace, grace_problems = person(browser, day)
    ada, ada_problems = person(browser, day)

    # 1. The organizer makes spring, puts the problem in it, asks to approve sign-ups.
    log_in(jury, "jury")
    jury.goto("/admin/contests")
    jury.get_by_label("Slug").fill("spring")
    jury.get_by_label("Title").fill("Spring round")
    jury.get_by_role("button", name="Make the contest").click()
    flash(jury, "contest 'spring' made")
    spring = jury.locator("section.contest", has=jury.locator("h2 .slug", has_text="spring"))
    spring.locator("select[name=problem]").select_option(PROBLEM)
    spring.get_by_role("button", name="Add or pin").click()
    flash(jury, f"'{PROBLEM}' is in 'spring'")
    expect(spring).to_contain_text(f"{PROBLEM} v1")
    contest_settings(jury, "spring", **{"Accounts are made": "approval"})
    expect(jury.get_by_label("Accounts are made")).to_have_value("approval")

    # 2. The newcomer signs up for spring; no login until the organizer approves.
    grace.goto("/signup?contest=spring")
    grace.get_by_label("Username").fill("grace")
    grace.get_by_label("Password").fill("grace-password")
    grace.get_by_label("A new team's name").fill("Hopper")
    grace.get_by_role("button", name="Sign up").click()
    expect(grace.locator(".flash.ok")).to_contain_text("waits for an organizer's approval")
    expect(grace.locator("#invite-code")).to_have_count(1)
    shot(grace, "signup")
    log_in(grace, "grace", refused="waits for an organizer's approval")
    jury.goto("/admin/accounts")
    jury.get_by_role("row").filter(has_text="grace").get_by_role("button", name="Approve").click()
    flash(jury, "'grace' is active")
    jury.goto("/admin/contests")
    expect(spring).to_contain_text("Hopper · approved")
    main = jury.locator("section.contest", has=jury.locator("h2 .slug", has_text="main"))
    expect(main.get_by_role("listitem").filter(has_text="Hopper")).to_have_count(0)  # spring only
    log_in(grace, "grace")
    grace.goto("/problems")
    expect(grace.locator("h1")).to_have_text("Spring round")
    expect(grace.get_by_role("link", name=re.compile("small"))).to_have_count(1)
    expect(grace.get_by_text("Other contests")).to_have_count(0)  # main is not hers
    grace.goto("/problems?contest=main")
    expect(grace.locator("h1")).to_have_text("404 · Not Found")
    grace.goto("/problems")  # the refused choice left nothing in her session
    expect(grace.locator("h1")).to_have_text("Spring round")

    # 3. Each team submits through the form and watches it judged.
    log_in(ada, "ada")
    ada.goto("/problems")
    expect(ada.locator("h1")).to_have_text("MemoRace")  # main keeps its migrated title
    expect(ada.get_by_text("Other contests")).to_have_count(0)  # spring is not hers
    submit(ada)
    submit(grace)
    wait_judged(ada)
    wait_judged(grace)
    grace_sub, ada_sub = grace.url, ada.url
    for page, own, other in ((grace, "Hopper", "Lovelace"), (ada, "Lovelace", "Hopper")):
        page.goto(BOARD)
        expect(page.locator("tr.own")).to_contain_text(own)
        expect(page.locator("table.board")).not_to_contain_text(other)  # another contest
        page.goto("/leaderboard")
        expect(page.locator("main table")).to_contain_text(own)
        expect(page.locator("main table")).not_to_contain_text(other)

    # 4. Questions: spring's answered privately, main's to every team of main.
    spring_q, main_q = "may the planner read the case name?", "is stderr kept in the log?"
    spring_a, main_a = "no, only its stdin", "yes, the first 64 KiB"
    ask(grace, spring_q)
    answer(jury, "spring", spring_q, spring_a, "team")
    ask(ada, main_q)
    answer(jury, "main", main_q, main_a, "all")
    for page, mine, theirs in ((grace, (spring_q, spring_a), (main_q, main_a)),
                               (ada, (main_q, main_a), (spring_q, spring_a))):  # fmt: skip
        page.goto("/clarifications")
        questions = page.locator("section", has=page.get_by_role("heading", name="Questions"))
        for text in mine:
            expect(questions).to_contain_text(text)
        for text in theirs:
            expect(questions).not_to_contain_text(text)
    expect(ada.locator("article.message", has_text=main_q)).to_contain_text("to every team")

    # 5. An announcement in spring: live on the newcomer's open page, not on main's.
    grace.goto("/problems")
    ada.goto("/problems")
    jury.goto("/clarifications?contest=spring")
    news = "spring ends at 18:00 sharp"
    jury.get_by_label("Announcement").fill(news)
    jury.get_by_role("button", name="Announce to every team").click()
    flash(jury, "sent")
    live = grace.locator("#notices .notice.announcement")
    expect(live).to_contain_text(f"Announcement: {news}", timeout=LIVE_MS)
    expect(grace.locator("h1")).to_have_text("Spring round")  # the same page: no reload
    shot(grace, "announcement")
    ada.wait_for_timeout(2000)  # absence: give the stream the time it took the other page
    expect(ada.locator("#notices .notice")).to_have_count(0)
    ada.goto("/clarifications")
    expect(ada.locator("main")).not_to_contain_text(news)

    # 6. Main freezes (an hour ago), spring reveals its hidden results.
    an_hour_ago = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S")
    contest_settings(jury, "main", **{"Leaderboard freeze (UTC)": an_hour_ago})
    contest_settings(jury, "spring", **{"Reveal hidden results": "check"})
    hidden_th = "table.board th:text-is('Hidden')"
    ada.goto(BOARD)
    expect(ada.locator("main")).to_contain_text("The board is frozen")
    expect(ada.locator(hidden_th)).to_have_count(0)
    expect(ada.locator("main")).to_contain_text("Ranked by public score")
    grace.goto(BOARD)
    expect(grace.locator("main")).not_to_contain_text("frozen")
    expect(grace.locator(hidden_th)).to_have_count(1)
    expect(grace.locator("main")).to_contain_text("Ranked by hidden score")
    shot(grace, "revealed-board")
    hidden_score = "table.cases tr:has(.split.hidden) td:nth-child(7)"
    ada.goto(ada_sub)
    expect(ada.locator(hidden_score)).to_have_text("withheld")
    grace.goto(grace_sub)
    expect(grace.locator(hidden_score)).to_have_text(re.compile(r"^\d+\.\d{4}$"))
    shot(grace, "revealed-submission")
    for page, said in ((ada, "The leaderboard freezes at"), (grace, "Hidden scores are revealed")):
        page.goto("/problems")
        expect(page.locator("main")).to_contain_text(said)
    expect(ada.locator("main")).not_to_contain_text("Hidden scores are revealed")
    expect(grace.locator("main")).not_to_contain_text("The leaderboard freezes")
    # Hers: the refused login (403) and main's page (404), each its response and the
    # console's line; nothing else.
    expected = [p for p in grace_problems if re.search(r"\b40[34]\b", p)]
    assert f"403 {day.url}/login" in expected and f"404 {day.url}/problems?contest=main" in expected
    grace_problems = [p for p in grace_problems if p not in expected]
    assert (jury_problems, grace_problems, ada_problems) == ([], [], []), (
        jury_problems, grace_problems, ada_problems)  # fmt: skip


def test_the_announce_form_keeps_its_pages_contest(day: Service, browser) -> None:
    """An organizer with two tabs: the announcement written on autumn's page goes to
    autumn, though another tab opened main since (the session's contest)."""
    from playwright.sync_api import expect

    # Set-up through the API (the pages are the first test's): a contest with the problem.
    made = day.api("POST", "/api/v1/admin/contests", json={"slug": "autumn", "title": "Autumn"})
    assert made.status_code == 201, made.text
    put = day.api("PUT", f"/api/v1/admin/contests/autumn/problems/{PROBLEM}", json={})
    assert put.status_code in (200, 201), put.text
    jury, problems = person(browser, day)
    log_in(jury, "jury")
    jury.goto("/clarifications?contest=autumn")
    other = jury.context.new_page()
    other.goto("/problems?contest=main")  # the session's contest is main now
    news = "autumn opens its sign-up tomorrow"
    jury.get_by_label("Announcement").fill(news)
    jury.get_by_role("button", name="Announce to every team").click()
    flash(jury, "sent")
    for contest, shown in (("autumn", 1), ("main", 0)):
        jury.goto(f"/clarifications?contest={contest}")
        expect(jury.locator("article.message", has_text=news)).to_have_count(shown)
    assert problems == [], problems
