"""The online type through the service, over real HTTP, on both backends (SQLite with the
embedded broker; PostgreSQL with Redis) and a real worker: an organizer imports a small
online package, a contestant submits an allocator, the result carries µs/request (mean,
p99) beside the same per-case scores as a local judging, a rescore re-verifies the kept
transcripts to the same scores, and a hidden case's request times stay withheld until
the reveal, in the API, the pages and the `memorace` command. Also: the starter kit's
allocator templates and the /types page."""

from __future__ import annotations

import io
import random
import re
import zipfile
from pathlib import Path

import pytest

from judge.console import print_cases
from judge.package import load_problem
from judge.pipeline import judge_planner
from judge.starterkit import kit_templates
from tests.online_cases import FIRST_FIT_PY, make_package, random_trace, trace_text
from tests.service import start_service, wait_for
from tests.test_service_e2e import backends, sandbox_for_tests

SLUG = "online-svc"
PUBLIC = ("p1", "p2")
HIDDEN = "h1"


def online_package(root: Path) -> Path:
    """Two public cases and one hidden one, small random traces (seeded)."""
    rng = random.Random(20261206)
    cases = {name: trace_text(random_trace(rng, 150)) for name in PUBLIC}
    pkg = make_package(root, cases, slug=SLUG)
    (pkg / "data" / "hidden").mkdir()
    (pkg / "data" / "hidden" / f"{HIDDEN}.events").write_text(trace_text(random_trace(rng, 150)))
    with (pkg / "problem.toml").open("a") as toml:
        toml.write(f'\n[[cases]]\nname = "{HIDDEN}"\nsplit = "hidden"\ncapacity = {2**40}\n')
    return pkg


@pytest.fixture(scope="module", params=["embedded", "postgres+redis"])
def stack(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("online")
    with backends(request.param) as (db_url, broker_url):
        service = start_service(tmp, [], db_url, broker_url, sandbox_for_tests(),
                                workers=("w1",))  # fmt: skip
        try:
            yield service, tmp
        finally:
            service.stop()


def test_an_online_problem_through_the_service(stack) -> None:
    service, tmp = stack
    pkg = online_package(tmp / "pkg")
    job = service.import_package(pkg)
    assert job["status"] == "done" and job["problem"] == SLUG, job
    token = service.add_team("allocators", "olga")
    source = tmp / "first_fit.py"
    source.write_text(FIRST_FIT_PY)
    done = service.wait_done(token, service.submit(token, SLUG, source)["id"])
    assert done["status"] == "done", done["status_detail"]
    assert [r["verdict"] for r in done["results"]] == ["OK"] * 3, done["results"]
    public = {r["case"]: r for r in done["results"] if r["split"] == "public"}
    assert sorted(public) == list(PUBLIC)
    for r in public.values():
        assert r["request_us_mean"] > 0 and r["request_us_p99"] > 0, r
        assert r["makespan_us"] is None and r["plan_digest"], r
    (hidden,) = [r for r in done["results"] if r["split"] == "hidden"]
    assert hidden["withheld"] and hidden["time_s"] is None, hidden
    assert hidden["request_us_mean"] is None and hidden["request_us_p99"] is None, hidden
    seen = service.api("GET", f"/api/v1/submissions/{done['id']}").json()  # the organizer's
    (full,) = [r for r in seen["results"] if r["split"] == "hidden"]
    assert full["request_us_mean"] > 0 and full["request_us_p99"] > 0, full

    # The same per-case scores as the local pipeline (same verifier, same transcript).
    local = judge_planner(load_problem(pkg), source, "all", sandbox=sandbox_for_tests())
    scores = {r.case: (str(r.verdict), r.score) for r in local.results}
    assert {r["case"]: (r["verdict"], r["score"]) for r in seen["results"]} == scores
    assert all(r.request_us_mean is not None for r in local.results)

    # The submission page and the CLI show µs/request; the hidden case's stay withheld.
    page = service.api("GET", f"/submissions/{done['id']}", token).text
    assert "µs/request (p99)" in page
    # The live table: three cases; the comparison: the two public ones (before the reveal).
    # Cells, not substrings: two cases may well share a mean to one decimal.
    cells = re.findall(r'class="num request-us">([^<]*)</td>', page)
    times = sorted(
        f"{r['request_us_mean']:.1f} ({r['request_us_p99']:.1f})" for r in public.values()
    )
    assert len(cells) == 3 + 2 and cells[0] == "", page  # h1 first, its times withheld
    assert sorted(cells[1:3]) == times and sorted(cells[3:]) == times, page
    compared = service.api("GET", f"/api/v1/submissions/{done['id']}/comparison", token).json()
    assert {r["case"]: r["request_us_p99"] for r in compared["rows"]} == {
        c: public[c]["request_us_p99"] for c in PUBLIC
    }
    case_page = service.api("GET", f"/submissions/{done['id']}?case=p1", token).text
    assert f"{public['p1']['request_us_mean']:.1f} µs/request (p99" in case_page, case_page
    shown = service.cli(token, "status", str(done["id"]))
    assert "µs/request" in shown and f"{public['p2']['request_us_mean']:.1f}" in shown, shown
    assert shown.count("hidden") >= 3, shown  # h1's peak, score, time, µs... are "hidden"

    # An allocator that answers every request right, then exits 3: its transcripts are
    # valid, yet the run's verdict must stand through a rescore (never turned into OK).
    crash = tmp / "crash.py"
    crash.write_text(FIRST_FIT_PY + "sys.exit(3)\n")
    crashed = service.wait_done(token, service.submit(token, SLUG, crash)["id"])
    verdicts = [r["verdict"] for r in crashed["results"] if r["split"] == "public"]
    assert verdicts == ["RUNTIME_ERROR"] * 2, crashed["results"]

    # A rescore re-verifies the kept transcripts: the same scores, the same request times.
    assert service.api("POST", f"/api/v1/admin/problems/{SLUG}/rescore").status_code == 202

    def rescored() -> dict | None:
        body = service.api("GET", f"/api/v1/submissions/{done['id']}").json()
        return body if body["judging_id"] != seen["judging_id"] else None

    after = wait_for(rescored, 60, "the rescore")
    keys = ("case", "verdict", "score", "peak", "request_us_mean", "request_us_p99")
    assert [[r[k] for k in keys] for r in after["results"]] == [
        [r[k] for k in keys] for r in seen["results"]
    ]
    assert after["public_score"] == seen["public_score"]
    again = service.api("GET", f"/api/v1/submissions/{crashed['id']}", token).json()
    assert again["judging_id"] != crashed["judging_id"], again  # rescored too
    assert [r["verdict"] for r in again["results"] if r["split"] == "public"] == verdicts
    assert again["public_score"] == 0.0

    # The rules page of the type, linked from the problem page; the starter kit.
    problem_page = service.api("GET", f"/problems/{SLUG}", token).text
    assert 'href="/types/online"' in problem_page
    rules = service.api("GET", "/types/online", token)
    assert rules.status_code == 200 and "<h2>Protocol" in rules.text, rules.text[:300]
    assert service.api("GET", "/types/nosuch", token).status_code == 404
    kit = service.api("GET", f"/api/v1/problems/{SLUG}/starter-kit", token)
    names = zipfile.ZipFile(io.BytesIO(kit.content)).namelist()
    top = f"{SLUG}-v1-starter-kit/"
    assert {top + "allocator.py", top + "allocator.cpp", top + "CONTRACT.md"} <= set(names)
    assert not any(HIDDEN in n for n in names), names


def test_the_starter_allocators_pass_the_online_cases(tmp_path: Path) -> None:
    """Both templates give valid answers (best fit: the same peaks) on random traces with
    alignments, frees in any order and blocks never freed."""
    rng = random.Random(7)
    cases = {f"r{i}": trace_text(random_trace(rng, 300)) for i in range(3)}
    problem = load_problem(make_package(tmp_path, cases, capacity=2**24))
    peaks = {}
    for name, path in kit_templates("online").items():
        report = judge_planner(problem, path, "public", sandbox="local", build_cache=None)
        assert [str(r.verdict) for r in report.results] == ["OK"] * 3, report.results
        peaks[name] = [r.peak for r in report.results]
    assert peaks["allocator.py"] == peaks["allocator.cpp"], peaks


def test_the_result_table_shows_request_times_for_online_results(capsys) -> None:
    case = {
        "case": "c",
        "split": "public",
        "verdict": "OK",
        "peak": 10,
        "lower_bound": 8,
        "score": 0.8,
        "time_s": 0.1,
        "request_us_mean": 12.345,
        "request_us_p99": 99.5,
    }
    withheld = {"case": "h", "split": "hidden", "verdict": "OK", "withheld": True}
    print_cases("t", [case, withheld], 80.0, None)
    text = capsys.readouterr().out
    assert "µs/request" in text and "p99 µs/request" in text
    assert "12.3" in text and "99.5" in text
    print_cases("t", [{**case, "request_us_mean": None, "request_us_p99": None}], 80.0, None)
    assert "µs/request" not in capsys.readouterr().out  # other types: no such columns
