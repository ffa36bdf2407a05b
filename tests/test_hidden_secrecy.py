"""Hidden cases keep their secrets, over real HTTP on both backends.

A contestant submits a planner that prints a marker naming each case into its log and
places one hidden case badly (so it has a message). Before the organizer reveals the
hidden results, nothing of a hidden case but its verdict reaches the contestant (API,
events, pages, CLI, leaderboard); with the contest setting hidden_detail = "judged" not
even the verdict; after the reveal, everything. (The local sandbox: what is shown does
not depend on the sandbox, and the Docker one is exercised by tests/test_service_e2e.py.)
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from api.reads.hidden import JUDGED, WITHHELD, shown_detail
from tests.service import VENV_BIN, Service, start_service, wait_for
from tests.test_service_e2e import backends, follow_events

SLUG = "secret"
GAP, SIZE_A, SIZE_B = 1234567, 7340033, 5555555  # odd sizes: the peak is a unique number
TOML = f"""\
slug = "{SLUG}"
name = "Secrets"
type = "offset"
version = 1

[limits]
time_limit_s = 10.0
memory_limit_mb = 512

[[cases]]
name = "pub"
split = "public"
capacity = 1024

[[cases]]
name = "sec-a"
split = "hidden"
capacity = {2**40}

[[cases]]
name = "sec-b"
split = "hidden"
capacity = {2**40}
"""
CASES = {
    "public/pub": "id,lower,upper,size\na,0,2,8\nb,1,3,8\n",
    "hidden/sec-a": f"id,lower,upper,size\na,0,2,{SIZE_A}\nb,1,3,{SIZE_A}\n",
    "hidden/sec-b": f"id,lower,upper,size\na,0,2,{SIZE_B}\nb,1,3,{SIZE_B}\n",
}
# sec-a: valid with a gap (a score below 1); sec-b: both buffers at 0 (an overlap).
PLANNER = f"""\
import json, os, sys
folder = os.environ["MEMORACE_CASE_DIR"]
name = json.load(open(os.path.join(folder, "case.json")))["name"]
print("MARKER-" + name + "-q7z")
print("MARKER-" + name + "-q7z", file=sys.stderr)
rows = [line.split(",") for line in open(os.path.join(folder, "buffers.csv")).read().split()[1:]]
size_a = int(rows[0][3])
b = 0 if name == "sec-b" else size_a + ({GAP} if name == "sec-a" else 0)
with open(os.path.join(os.environ["MEMORACE_OUT_DIR"], "plan.csv"), "w") as out:
    out.write("id,offset\\na,0\\nb," + str(b) + "\\n")
"""
HIDDEN = ("sec-a", "sec-b")


@contextlib.contextmanager
def secrets_service(backend: str, tmp: Path) -> Iterator[Service]:
    """A service on `backend` with the secrets problem (one hidden case of each kind),
    the baselines and one local worker."""
    package = tmp / SLUG
    for split in ("public", "hidden"):
        (package / "data" / split).mkdir(parents=True)
    (package / "problem.toml").write_text(TOML)
    (package / "statement.md").write_text("# Secrets\n")
    for name, text in CASES.items():
        (package / "data" / f"{name}.csv").write_text(text)
    with backends(backend) as (db_url, broker_url):
        svc = start_service(
            tmp, [package], db_url, broker_url, "local", extra_env={"MEMORACE_BASELINES": "1"},
            workers=("w1",),
        )  # fmt: skip
        try:
            yield svc
        finally:
            svc.stop(warm=False)  # the baselines' judgings still queued are no test's


@pytest.fixture(scope="module", params=["embedded", "postgres+redis"])
def service(request, tmp_path_factory):
    with secrets_service(request.param, tmp_path_factory.mktemp("secrecy")) as svc:
        yield svc


def follow(service: Service, token: str, sub_id: int) -> tuple[str, list[tuple[str, dict]]]:
    """The event stream until `end`: as text (each event's data) and as events."""
    events = follow_events(service, token, sub_id)
    return "\n".join(f"{name} {json.dumps(data)}" for name, data in events), events


def memorace(service: Service, token: str, *args: str) -> str:
    env = {**service.env, "MEMORACE_URL": service.url, "MEMORACE_TOKEN": token}
    run = subprocess.run(
        [str(VENV_BIN / "memorace"), *args], env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout + run.stderr


def views(service: Service, token: str, sub_id: int) -> tuple[str, list[dict]]:
    """Everything the contestant can read about the submission: (all text, JSON bodies
    that carry case results)."""
    get = lambda path: service.api("GET", path, token)  # noqa: E731
    texts, bodies = [], []
    raw, events = follow(service, token, sub_id)
    texts.append(raw)
    bodies += [data for event, data in events if event in ("case", "end")]
    for path in (f"/api/v1/submissions/{sub_id}", "/api/v1/submissions"):
        reply = get(path)
        assert reply.status_code == 200, reply.text
        texts.append(reply.text)
        bodies += reply.json() if isinstance(reply.json(), list) else [reply.json()]
    for path in (
        f"/submissions/{sub_id}",
        f"/submissions/{sub_id}/live",
        "/submissions",
        f"/api/v1/leaderboard/{SLUG}",
        f"/problems/{SLUG}/leaderboard",  # with the baselines and the history chart
        f"/api/v1/submissions/{sub_id}/comparison",
        f"/api/v1/problems/{SLUG}/history.svg",
        "/api/v1/exports/mine?format=csv",
        "/api/v1/exports/mine?format=json",
    ):
        reply = get(path)
        assert reply.status_code == 200, (path, reply.text)
        texts.append(reply.text)
    bodies += get("/api/v1/exports/mine?format=json").json()  # a case result per row
    cli = memorace(service, token, "status", str(sub_id))
    assert "None" not in cli and "Traceback" not in cli, cli
    texts.append(cli)
    return "\n".join(texts), bodies


def case_results(bodies: list[dict]) -> list[dict]:
    """Each case result in the bodies (a case event is itself one)."""
    found = []
    for body in bodies:
        found += body.get("results", [body])
    return found


def secrets_of(full: dict) -> list[str]:
    """What an organizer sees of the hidden cases that nobody else may, as text."""
    found = [f"MARKER-{name}" for name in HIDDEN]
    found += [str(full["hidden_score"]), f"{full['hidden_score']:.2f}"]
    for r in full["results"]:
        if r["split"] == "hidden":
            found += [r["message"], r["plan_digest"], str(r["peak"]), str(r["lower_bound"])]
            found += [f"{r['score']:.4f}"] if r["score"] else []  # "0.0000" is in "100.0000"
    return [s for s in found if s and s != "None"]


def organizer_form(service: Service, hidden_detail: str) -> httpx.Response:
    """Set hidden_detail through the admin page, as a browser does (session, CSRF)."""
    with httpx.Client(base_url=service.url, timeout=60, follow_redirects=True) as browser:
        page = browser.get("/login").text
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
        form = {"username": "boss", "password": "boss-password", "csrf_token": csrf}
        assert browser.post("/login", data=form).status_code == 200
        page = browser.get("/admin").text
        assert 'name="hidden_detail"' in page
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
        form = {"title": "Secrets", "hidden_detail": hidden_detail, "csrf_token": csrf}
        return browser.post("/admin/contest", data=form)


def test_hidden_cases_show_their_verdict_or_less_until_the_reveal(service: Service) -> None:
    token = service.add_team("red", "alice")
    boss = {"username": "boss", "password": "boss-password", "admin": True}
    assert service.api("POST", "/api/v1/admin/users", json=boss).status_code == 201
    planner = service.data_dir.parent / "planner.py"
    planner.write_text(PLANNER)
    sub_id = service.submit(token, SLUG, planner)["id"]
    live, _ = follow(service, token, sub_id)  # while it is judged
    full = service.wait_done(service.admin_token, sub_id, timeout=120)  # the organizer's view
    verdicts = {r["case"]: r["verdict"] for r in full["results"]}
    assert verdicts == {"pub": "OK", "sec-a": "OK", "sec-b": "INVALID_PLAN"}, full
    assert all("MARKER-" + r["case"] in r["log"] for r in full["results"]), full
    secrets = secrets_of(full)
    assert 0 < full["hidden_score"] < 100 and all(secrets)

    # Before the reveal, with the default setting: each hidden case's verdict alone.
    text, bodies = views(service, token, sub_id)
    text += live
    assert "MARKER-pub" in text  # the public case's log shows (the check can see)
    for secret in secrets:
        assert secret not in text, secret
    assert "INVALID_PLAN" in text and "overlap" not in text
    for r in case_results(bodies):
        if r["split"] == "hidden":
            assert r["withheld"] and r["verdict"] == verdicts[r["case"]]
            assert all(r[key] is None for key in WITHHELD), r
    for body in bodies:
        assert body.get("hidden_score") is None
    detail = service.api("GET", f"/api/v1/submissions/{sub_id}", token).json()["status_detail"]
    assert detail == "judged (judge): 1 OK; 2 hidden judged"  # no hidden verdict counts
    views_apart(service, token, secrets)
    assert service.api("GET", f"/submissions/{sub_id}?case=sec-a", token).status_code == 404

    # The setting is the organizer's: other values are refused, in the API and the form.
    bad = service.api("PUT", "/api/v1/admin/contest", json={"hidden_detail": "everything"})
    assert bad.status_code == 422, bad.text
    assert organizer_form(service, "everything").status_code == 422
    assert service.api("PUT", "/api/v1/admin/contest", token, json={}).status_code == 403
    assert organizer_form(service, "judged").status_code == 200  # after its redirect
    assert service.api("GET", "/api/v1/admin/contest").json()["hidden_detail"] == "judged"

    # "judged": not even the verdict.
    text, bodies = views(service, token, sub_id)
    for secret in [*secrets, "INVALID_PLAN"]:
        assert secret not in text, secret
    for r in case_results(bodies):
        if r["split"] == "hidden":
            assert r["withheld"] and r["verdict"] == JUDGED, r
    organizer = service.api("GET", f"/api/v1/submissions/{sub_id}").json()
    assert organizer["results"] == full["results"]  # organizers see everything, always

    # After the reveal, everything.
    reply = service.api("PUT", "/api/v1/admin/contest", json={"hidden_revealed": True})
    assert reply.status_code == 200
    text, bodies = views(service, token, sub_id)
    for secret in [*secrets, "INVALID_PLAN", "overlap"]:
        assert secret in text, secret
    mine = service.api("GET", f"/api/v1/submissions/{sub_id}", token).json()
    assert mine["results"] == full["results"] and mine["hidden_score"] == full["hidden_score"]
    assert mine["status_detail"] == full["status_detail"]
    picture = service.api("GET", f"/submissions/{sub_id}?case=sec-a", token)
    assert picture.status_code == 200 and "<svg" in picture.text


def views_apart(service: Service, token: str, secrets: list[str]) -> None:
    """Before the reveal: the starter kit holds nothing of a hidden case (not its name);
    the comparison no hidden row; the baselines no hidden score (their hidden split is
    not even judged yet); the organizer's exports and the hidden chart are refused."""
    kit = service.api("GET", f"/api/v1/problems/{SLUG}/starter-kit", token)
    assert kit.status_code == 200
    with zipfile.ZipFile(io.BytesIO(kit.content)) as zf:
        files = {n: zf.read(n).decode(errors="replace") for n in zf.namelist()}
    assert not any(n.endswith(("sec-a.csv", "sec-b.csv")) for n in files), list(files)
    for text in files.values():
        assert "sec-a" not in text and "sec-b" not in text and str(SIZE_A) not in text
        assert not any(secret in text for secret in secrets)

    # Wait for the baselines (the worker judges them after the contestant's submission).
    def judged_baselines() -> list[dict] | None:
        rows = service.api("GET", f"/api/v1/leaderboard/{SLUG}").json()["baselines"]
        return [r for r in rows if r["status"] == "done"] or None

    rows = wait_for(judged_baselines, 120, "a judged baseline")
    assert all(r["hidden_score"] is None for r in rows)  # not judged, even for organizers
    for r in rows:
        judged = service.api("GET", f"/api/v1/submissions/{r['submission_id']}").json()
        assert {c["split"] for c in judged["results"]} == {"public"}
    sub_id = service.api("GET", "/api/v1/submissions", token).json()[0]["id"]
    compared = service.api("GET", f"/api/v1/submissions/{sub_id}/comparison", token).json()
    assert [r["split"] for r in compared["rows"]] == ["public"]
    for what in ("standings", "results", "audit"):
        assert service.api("GET", f"/api/v1/admin/exports/{what}", token).status_code == 403
    hidden_chart = f"/api/v1/problems/{SLUG}/history.svg?score=hidden_score"
    assert service.api("GET", hidden_chart, token).status_code == 403
    assert service.api("GET", hidden_chart).status_code == 200  # the organizer's


@pytest.mark.parametrize("policy", ["verdict", "judged"])
def test_a_judge_failure_keeps_its_reason_from_contestants(policy: str) -> None:
    """The reason may quote a hidden case (an exception's text): contestants get the
    status without it until the reveal, organizers get it whole."""
    why = "ReplayError: case sec-a (hidden): a (7340033 bytes) overlaps b"
    lines = {
        "queued": (f"the judge failed ({why}); retrying", "the judge failed; retrying"),
        "error": (
            f"the judge failed after 3 attempts ({why}); this is our fault, not your "
            "planner's: an organizer has been told and can rejudge it",
            "the judge failed after 3 attempts; this is our fault, not your planner's: "
            "an organizer has been told and can rejudge it",
        ),
    }
    for status, (detail, shown) in lines.items():
        sub = SimpleNamespace(status=status, status_detail=detail)
        assert shown_detail(sub, None, [], policy) == shown  # type: ignore[arg-type]
        assert shown_detail(sub, None, [], "all") == detail  # type: ignore[arg-type]
