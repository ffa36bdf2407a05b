"""Hidden cases leak nothing while they are judged, over real HTTP on both backends.

Results that arrive one case at a time tell how long each case took, and a planner can
make that time depend on the case (one sleeping (buffers % 40) x 0.25 s decoded every
hidden case). So until the reveal a contestant sees no hidden result and no hidden
progress while the judging runs: no hidden row in the API, the page or the events,
and the count of judged cases moves with the public ones; at the end the hidden
verdicts come all at once. Organizers see everything live. The problem's description
shows no figure of a hidden case (capacity, items, bound) before the reveal either.
"""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from judge.pictures.svg import human_bytes
from tests.service import Service, start_service, wait_for
from tests.test_service_e2e import backends

SLUG = "timing"
SLOW_S = 6.0  # sec-b's planner sleeps this long: the window in which sec-a is judged
CAPACITY_A = 98765432109  # a figure found nowhere else in the pages
TOML = f"""\
slug = "{SLUG}"
name = "Timing"
type = "offset"
version = 1

[limits]
time_limit_s = 20.0
memory_limit_mb = 512

[[cases]]
name = "pub"
split = "public"
capacity = 1024

[[cases]]
name = "sec-a"
split = "hidden"
capacity = {CAPACITY_A}

[[cases]]
name = "pub2"
split = "public"
capacity = 2048

[[cases]]
name = "sec-b"
split = "hidden"
capacity = 4096
"""
CASE = "id,lower,upper,size\na,0,2,8\nb,1,3,8\nc,2,4,8\n"
PLANNER = f"""\
import json, os, time
folder = os.environ["MEMORACE_CASE_DIR"]
if json.load(open(os.path.join(folder, "case.json")))["name"] == "sec-b":
    time.sleep({SLOW_S})
with open(os.path.join(os.environ["MEMORACE_OUT_DIR"], "plan.csv"), "w") as out:
    out.write("id,offset\\na,0\\nb,8\\nc,16\\n")
"""


@pytest.fixture(scope="module", params=["embedded", "postgres+redis"])
def service(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("timing")
    package = tmp / SLUG
    for split in ("public", "hidden"):
        (package / "data" / split).mkdir(parents=True)
    (package / "problem.toml").write_text(TOML)
    (package / "statement.md").write_text("# Timing\n")
    for name in ("public/pub", "hidden/sec-a", "public/pub2", "hidden/sec-b"):
        (package / "data" / f"{name}.csv").write_text(CASE)
    with backends(request.param) as (db_url, broker_url):
        svc = start_service(tmp, [package], db_url, broker_url, "local", workers=("w1",))
        try:
            yield svc
        finally:
            svc.stop()


class Recorder(threading.Thread):
    """Reads a submission's event stream until `end`, in the background."""

    def __init__(self, service: Service, token: str, sub_id: int):
        super().__init__(daemon=True)
        self.url = f"{service.url}/api/v1/submissions/{sub_id}/events"
        self.token = token
        self.events: list[tuple[str, dict]] = []

    def run(self) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        with httpx.stream("GET", self.url, headers=headers, timeout=120) as reply:
            assert reply.status_code == 200
            name = ""
            for line in reply.iter_lines():
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    self.events.append((name, json.loads(line[6:])))
                    if name == "end":
                        return


def until_done(events: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
    """The events before the status event that says the judging is over."""
    for i, (name, data) in enumerate(events):
        if name == "status" and data["status"] in ("done", "error"):
            return events[:i]
    raise AssertionError(f"no final status in {events}")


def test_hidden_cases_show_nothing_while_judged(service: Service) -> None:
    token = service.add_team("red", "alice")
    planner = service.data_dir.parent / "planner.py"
    planner.write_text(PLANNER)
    sub_id = service.submit(token, SLUG, planner)["id"]
    mine, theirs = Recorder(service, token, sub_id), Recorder(service, service.admin_token, sub_id)
    mine.start()
    theirs.start()

    def sec_a_judged() -> dict | None:  # with sec-b still running (it sleeps)
        body = service.api("GET", f"/api/v1/submissions/{sub_id}").json()
        judged = {r["case"] for r in body["results"]}
        return body if "sec-a" in judged and body["status"] == "running" else None

    organizer = wait_for(sec_a_judged, 60, "sec-a judged while sec-b runs", 0.1)
    assert organizer["cases_done"] == 3 and organizer["cases_total"] == 4
    assert "3 of 4" in organizer["status_detail"]
    # The contestant, meanwhile: both public cases (workers take every public case
    # before any hidden one, so pub2, listed after sec-a, ran first), no hidden one.
    body = service.api("GET", f"/api/v1/submissions/{sub_id}", token).json()
    assert body["status"] == "running", body
    assert [r["case"] for r in body["results"]] == ["pub", "pub2"], body
    assert (body["cases_done"], body["cases_total"]) == (2, 4), body
    assert "2 of 2 public" in body["status_detail"], body
    listed = service.api("GET", "/api/v1/submissions", token).json()
    assert [r["case"] for r in listed[0]["results"]] == ["pub", "pub2"]
    for page in (f"/submissions/{sub_id}", f"/submissions/{sub_id}/live"):
        text = service.api("GET", page, token).text
        assert "sec-a" not in text and "pub2" in text, text
        assert "2 of 4 judged" in text and "3 of 4" not in text, text
    judging_s = time.monotonic()

    mine.join(120)
    theirs.join(120)
    judging_s = time.monotonic() - judging_s
    assert not mine.is_alive() and not theirs.is_alive()
    live = until_done(mine.events)
    assert [d["case"] for n, d in live if n == "case"] == ["pub", "pub2"], mine.events
    assert all(d["cases_done"] <= 2 for _, d in live), live
    assert all("3 of" not in d.get("status_detail", "") for _, d in live), live
    # At the end the hidden verdicts come, all at once.
    end = mine.events[-1][1]
    assert {r["case"]: r["verdict"] for r in end["results"]} == {
        "pub": "OK", "sec-a": "OK", "pub2": "OK", "sec-b": "OK"
    }  # fmt: skip
    assert (end["cases_done"], end["cases_total"]) == (4, 4)
    assert all(r["withheld"] for r in end["results"] if r["split"] == "hidden")
    # The organizer saw sec-a while sec-b ran.
    live = until_done(theirs.events)
    assert {"sec-a", "pub2"} <= {d["case"] for n, d in live if n == "case"}, theirs.events
    print(f"\nthe hidden part's time (the residual channel): ~{judging_s:.1f} s seen at the end")


def problem_views(service: Service, token: str | None) -> tuple[dict, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    api = httpx.get(f"{service.url}/api/v1/problems/{SLUG}", headers=headers, timeout=30)
    page = httpx.get(f"{service.url}/problems/{SLUG}", headers=headers, timeout=30)
    assert api.status_code == 200 and page.status_code == 200, (api.text, page.text)
    return {c["name"]: c for c in api.json()["case_list"]}, page.text


def test_the_problem_shows_no_hidden_figures_until_the_reveal(service: Service) -> None:
    """The capacity is ~1.25 x the lower bound in the shipped packages: it would tell
    the hidden bound to 0.04%. Items and bounds are derived from the hidden data."""
    token = service.add_team("blue", "bob")
    secrets = (str(CAPACITY_A), human_bytes(CAPACITY_A))
    for who in (None, token):
        cases, page = problem_views(service, who)
        assert cases["pub"]["capacity"] == 1024 and cases["pub"]["items"] == 3
        for name in ("sec-a", "sec-b"):
            assert [cases[name][k] for k in ("capacity", "items", "lower_bound")] == [None] * 3
        for secret in secrets:
            assert secret not in page, secret
    cases, page = problem_views(service, service.admin_token)
    assert cases["sec-a"]["capacity"] == CAPACITY_A and cases["sec-a"]["items"] == 3
    assert all(secret in page for secret in secrets)

    reveal = service.api("PUT", "/api/v1/admin/contest", json={"hidden_revealed": True})
    assert reveal.status_code == 200, reveal.text
    cases, page = problem_views(service, None)
    assert cases["sec-a"]["capacity"] == CAPACITY_A and cases["sec-a"]["items"] == 3
    assert cases["sec-a"]["lower_bound"] is not None
    assert all(secret in page for secret in secrets)
