"""The readers of outside input that the views added, fuzzed (hypothesis) in-process on
SQLite: the export and chart query parameters, the contest's baselines switch (API and
form); and the pieces they write: the starter kit's problem.toml (the public cases
alone, still a valid package), the chart's escaping, the CSV cells (formulas defused,
numbers read back exactly) and the board's baseline placement."""

from __future__ import annotations

import csv
import io
import re
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from api import queue
from api.actions.baselines import interleave
from api.reads.exports import as_csv
from api.settings import get_settings
from judge.package import load_cases, load_problem
from judge.pictures.history import Reference, Series, history_svg
from judge.starterkit import public_toml, starter_kit
from tests.test_api_hostile_input import browser
from tests.test_package import make_package

FUZZ = hypothesis_settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@pytest.fixture(scope="module")
def client(tmp_path_factory) -> Iterator[TestClient]:
    tmp = tmp_path_factory.mktemp("views-readers")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("MEMORACE_DATA_DIR", str(tmp / "data"))
        get_settings.cache_clear()
        queue.producer.cache_clear()
        from api.app import create_app
        from api.bootstrap import bootstrap

        token = bootstrap(get_settings(), "admin", [make_package(tmp / "pkg")])
        with TestClient(create_app()) as made:
            made.headers["Authorization"] = f"Bearer {token}"
            body = {"username": "root2", "password": "root2-password", "admin": True}
            assert made.post("/api/v1/admin/users", json=body).status_code == 201
            yield made
        get_settings.cache_clear()
        queue.producer.cache_clear()


@FUZZ
@given(what=text, fmt=text, problem=text, score=text)
def test_export_and_chart_parameters_never_fail_the_server(
    client: TestClient, what: str, fmt: str, problem: str, score: str
) -> None:
    params = {"format": fmt, "problem": problem}
    reply = client.get(f"/api/v1/admin/exports/{quote(what, safe='') or 'x'}", params=params)
    assert reply.status_code in (200, 404, 422), reply.text
    if reply.status_code == 200:
        assert fmt in ("csv", "json") and (not problem or problem == "tiny")
    mine = client.get("/api/v1/exports/mine", params={"format": fmt})
    assert mine.status_code in (200, 422), mine.text
    chart = client.get("/api/v1/problems/tiny/history.svg", params={"score": score})
    assert chart.status_code in (200, 422), chart.text


@FUZZ
@given(value=st.one_of(text, st.booleans(), st.integers(), st.none()))
def test_the_baselines_switch_takes_a_boolean_only(client: TestClient, value: object) -> None:
    reply = client.put("/api/v1/admin/contest", json={"baselines": value})
    if isinstance(value, bool):
        assert reply.status_code == 200 and reply.json()["baselines"] is value
    elif value is None:
        assert reply.status_code == 422, reply.text
    else:  # pydantic reads "yes", 1, "true" as booleans; anything else is refused
        assert reply.status_code in (200, 422), reply.text


@FUZZ
@given(value=text)
def test_the_contest_form_takes_shown_or_hidden(client: TestClient, value: str) -> None:
    web, csrf = browser(client, "root2", "root2-password")
    form = {"csrf_token": csrf, "title": "t", "baselines": value}
    reply = web.post("/admin/contest", data=form, follow_redirects=False)
    if value in ("shown", "hidden"):
        assert reply.status_code == 303
        assert client.get("/api/v1/admin/contest").json()["baselines"] == (value == "shown")
    elif "\x00" in value:
        assert reply.status_code == 422
    else:
        assert reply.status_code in (303, 422), reply.text  # "" keeps the setting


def test_the_kit_holds_the_public_cases_alone(tmp_path: Path) -> None:
    problem = load_problem(make_package(tmp_path))
    toml = public_toml(problem)
    assert '"two"' not in toml and '"one"' in toml
    name, data = starter_kit(problem)
    assert name == "tiny-v1-starter-kit.zip"
    assert starter_kit(problem)[1] == data  # deterministic
    out = tmp_path / "out"
    zipfile.ZipFile(io.BytesIO(data)).extractall(out)
    kit = out / "tiny-v1-starter-kit"
    unpacked = load_problem(kit / "tiny")  # a valid package, public cases only
    assert [c.name for c in unpacked.cases] == ["one"] and load_cases(unpacked)
    assert not (kit / "tiny" / "data" / "hidden").exists()
    readme = (kit / "README.md").read_text()
    assert "memorace judge planner.py --problem ./tiny --split public" in readme


@given(name=text, score=st.floats(0, 100))
def test_the_chart_escapes_every_name(name: str, score: float) -> None:
    now = datetime(2026, 12, 1, tzinfo=UTC)
    series = [Series(name, ((now - timedelta(minutes=5), score),), own=True)]
    svg = history_svg(name, series, [Reference(name, score)], None, now)
    assert "<script" not in svg and "style=" not in svg
    for raw in re.findall(r">([^<]*)<", svg):
        assert "<" not in raw and ">" not in raw


@given(rows=st.lists(st.fixed_dictionaries({"team": text, "score": st.floats(0, 100)})))
def test_csv_cells_read_back_and_never_run_as_formulas(rows: list[dict]) -> None:
    read = list(csv.DictReader(io.StringIO(as_csv(rows, ("team", "score")))))
    assert [float(r["score"]) for r in read] == [r["score"] for r in rows]
    for got, sent in zip(read, rows, strict=True):
        formula = sent["team"].startswith(("=", "+", "-", "@", "\t", "\r"))
        assert got["team"] == ("'" if formula else "") + sent["team"]


def test_baselines_rank_where_their_score_would() -> None:
    board = {
        "ranked_by": "public_score",
        "rows": [{"team": "a", "public_score": 90.0}, {"team": "b", "public_score": 50.0}],
        "baselines": [
            {"baseline": "naive", "public_score": 50.0},
            {"baseline": "greedy", "public_score": 95.0},
            {"baseline": "strong", "public_score": None},
        ],
    }
    order = [r.get("team") or r["baseline"] for r in interleave(board)]
    assert order == ["greedy", "a", "b", "naive", "strong"]
