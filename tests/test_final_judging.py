"""Hidden cases only in the final judging, and paced hidden cases, over real HTTP.

In the "final" mode a submission is judged on the public cases alone; a team picks up
to K submissions (else its best public one counts); the organizer starts the final
judging, which runs every case of each pick, and the hidden board shows at the reveal.
In the default mode the worker holds each hidden case to its budget (worker.pacing), so
that when a judging ends tells nothing of how long its hidden cases took.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from benchmarks.hidden_channel import SLUG, channel_service, planner, stream_times
from tests.service import Service
from tests.test_pages import login, post
from worker.pacing import budget_s

SCORE = 66.666667  # every case: bound 16 bytes, the planner's peak 24


@pytest.fixture(scope="module", params=["embedded", "postgres"])
def service(request, tmp_path_factory):
    with channel_service(tmp_path_factory.mktemp("finals"), request.param) as svc:
        yield svc


def submit(service: Service, token: str, symbol: int, nonce: int) -> int:
    path = service.data_dir.parent / f"planner{nonce}.py"
    path.write_text(planner(symbol, nonce))
    sub_id = service.submit(token, SLUG, path)["id"]
    service.wait_done(token, sub_id)
    return sub_id


def test_final_mode(service: Service) -> None:
    early = service.api("POST", "/api/v1/admin/final-judging", json={})
    assert early.status_code == 409 and "every submission" in early.text, early.text
    contest = {"hidden_judging": "final", "final_picks": 2}
    assert service.api("PUT", "/api/v1/admin/contest", json=contest).status_code == 200
    for wrong in ({"hidden_judging": "later"}, {"final_picks": 0}, {"final_picks": 21}):
        assert service.api("PUT", "/api/v1/admin/contest", json=wrong).status_code == 422
    red, blue = service.add_team("red", "rita"), service.add_team("blue", "bert")
    a, b = submit(service, red, 0, 1), submit(service, red, 1, 2)
    c = submit(service, blue, 0, 3)
    for sub_id, token in ((a, red), (a, None)):  # the team and the organizer alike
        body = service.api("GET", f"/api/v1/submissions/{sub_id}", token).json()
        assert [r["case"] for r in body["results"]] == ["pub"], body
        assert (body["cases_done"], body["cases_total"]) == (1, 1), body
        assert body["hidden_score"] is None and body["public_score"] == SCORE

    picks = service.api("GET", f"/api/v1/problems/{SLUG}/final", red).json()
    assert picks["judged_at_the_end"] == [a] and picks["picked"] == [] and not picks["locked"]
    for wrong, status in (([a, b, c], 422), ([c], 404), ([a, a], 422), ([9999], 404)):
        reply = service.api("PUT", f"/api/v1/problems/{SLUG}/final", red,
                            json={"submissions": wrong})  # fmt: skip
        assert reply.status_code == status, (wrong, reply.text)
    reply = service.api("PUT", f"/api/v1/problems/{SLUG}/final", red, json={"submissions": [b]})
    assert reply.status_code == 200 and reply.json()["judged_at_the_end"] == [b], reply.text
    assert service.api("POST", "/api/v1/admin/final-judging", red, json={}).status_code == 403

    shown = service.cli(red, "final", SLUG)
    assert f"takes #{b} (your picks; up to 2 picks)" in shown, shown
    assert json.loads(service.cli(red, "final", SLUG, str(b), "--json"))["picked"] == [b]

    with httpx.Client(base_url=service.url, timeout=60) as browser:  # the pages
        assert login(browser, "rita", "rita-password").is_redirect
        page = browser.get(f"/submissions/{a}").text
        assert "Final judging" in page and "not among them" in page, page
        for pick, expected in (("1", [a, b]), ("0", [b])):
            answer = post(browser, f"/submissions/{a}", f"/submissions/{a}/final-pick",
                          {"pick": pick})  # fmt: skip
            assert answer.is_redirect, answer.text
            picked = service.api("GET", f"/api/v1/problems/{SLUG}/final", red).json()["picked"]
            assert picked == expected

    # Picks sent at once never make more than K (each request locks the team).
    d = submit(service, red, 2, 4)
    pairs = [[a, b], [d, a], [b, d], [a], [d, b], [b, a]]
    with ThreadPoolExecutor(len(pairs)) as pool:
        answers = list(
            pool.map(
                lambda ids: service.api(
                    "PUT", f"/api/v1/problems/{SLUG}/final", red, json={"submissions": ids}
                ),
                pairs,
            )
        )
    assert all(r.status_code == 200 for r in answers), [r.text for r in answers]
    assert len(service.api("GET", f"/api/v1/problems/{SLUG}/final", red).json()["picked"]) <= 2
    assert service.api("PUT", f"/api/v1/problems/{SLUG}/final", red,
                       json={"submissions": [b]}).status_code == 200  # fmt: skip

    soon = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert service.api("PUT", "/api/v1/admin/contest", json={"end_at": soon}).is_success
    still_open = service.api("POST", "/api/v1/admin/final-judging", json={})
    assert still_open.status_code == 409 and "still open" in still_open.text
    ended = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()
    assert service.api("PUT", "/api/v1/admin/contest", json={"end_at": ended}).is_success
    late = service.api("PUT", f"/api/v1/problems/{SLUG}/final", red, json={"submissions": [a]})
    assert late.status_code == 409 and "ended" in late.text, late.text

    started = service.api("POST", "/api/v1/admin/final-judging", json={"problem": SLUG})
    assert started.status_code == 202 and started.json()["count"] == 2, started.text
    fixed = service.api("GET", f"/api/v1/problems/{SLUG}/final", blue).json()
    assert fixed["picked"] == [c] and fixed["locked"], fixed  # its default, fixed now
    for sub_id, token in ((b, red), (c, blue)):
        mine = service.wait_done(token, sub_id)
        assert mine["hidden_score"] is None and mine["cases_total"] == 3, mine
        assert all(r["withheld"] for r in mine["results"] if r["split"] == "hidden"), mine
        full = service.api("GET", f"/api/v1/submissions/{sub_id}").json()
        assert full["hidden_score"] == SCORE and full["status_detail"].startswith("judged (final)")
    untouched = service.api("GET", f"/api/v1/submissions/{a}").json()
    assert untouched["hidden_score"] is None and untouched["judging_status"] == "final"
    again = service.api("POST", "/api/v1/admin/final-judging", json={})
    assert again.status_code == 202 and again.json()["count"] == 0, again.text

    board = service.api("GET", f"/api/v1/leaderboard/{SLUG}", red).json()
    assert all(row["hidden_score"] is None for row in board["rows"]), board
    assert service.api("PUT", "/api/v1/admin/contest", json={"hidden_revealed": True}).is_success
    board = service.api("GET", f"/api/v1/leaderboard/{SLUG}", red).json()
    shown = {row["team"]: row["hidden_score"] for row in board["rows"]}
    assert shown == {"red": SCORE, "blue": SCORE}, board
    back = {"hidden_revealed": False, "hidden_judging": "submission", "end_at": None}
    assert service.api("PUT", "/api/v1/admin/contest", json=back).is_success


@pytest.mark.serial
@pytest.mark.parametrize("kind", ["embedded", "postgres"])
def test_paced_hidden_cases_end_alike(tmp_path: Path, kind: str) -> None:
    """The planner sleeps nothing, or 1.75 s over its hidden cases: the judging's end,
    timed from the last public result, comes at the same time (each hidden case is held
    to its budget); without pacing the two differ by the 1.75 s. The stream's keep-alives
    (every second here) come a whole number of seconds after the last frame sent, not
    after a hidden case's result was stored (0.5 s into each case for symbol 4)."""
    gaps, offsets = {}, []
    env = {"MEMORACE_PACE_HIDDEN": "1", "MEMORACE_SSE_KEEPALIVE_S": "1"}
    with channel_service(tmp_path, kind, env) as svc:
        hidden = {"hidden_detail": "judged", "hidden_judging": "submission"}
        assert svc.api("PUT", "/api/v1/admin/contest", json=hidden).status_code == 200
        token = svc.add_team("eve", "eve")
        for symbol in (0, 7, 4):
            path = tmp_path / f"p{symbol}.py"
            path.write_text(planner(symbol, symbol))
            sub_id = svc.submit(token, SLUG, path)["id"]
            last_public, end, keepalives = stream_times(svc, token, sub_id)
            gaps[symbol] = end - last_public
            offsets += [k - last_public for k in keepalives if last_public < k < end]
    budget = 2 * budget_s(2.0)  # two hidden cases of 2 s
    assert all(gap >= 0.9 * budget for gap in gaps.values()), gaps
    # 1.75 s apart unpaced; the margin holds on a loaded machine (jitter ~0.2 s).
    assert abs(gaps[7] - gaps[0]) < 0.9, gaps
    assert len(offsets) >= 12, offsets
    off_beat = [round(o, 2) for o in offsets if abs(o - round(o)) > 0.3]
    assert not off_beat, (off_beat, offsets)
    print(f"\npaced gaps: {gaps} (budget {budget:.1f} s)")
