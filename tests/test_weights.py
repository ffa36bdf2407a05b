"""Case weights: no split may end up weighing 0 (issue 9), through the admin API and
the organizer's weights form (in-process app, SQLite, embedded broker), and scoring
that never divides by zero."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from api import queue
from api.settings import get_settings
from judge.scoring import CaseResult, problem_score
from judge.verdict import Verdict
from tests.test_package import make_package

PASSWORD = "a-long-password"


@pytest.fixture
def client(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMORACE_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    queue.producer.cache_clear()
    from api.app import create_app
    from api.bootstrap import bootstrap

    token = bootstrap(get_settings(), "admin", [make_package(tmp_path / "pkg")], PASSWORD)
    with TestClient(create_app()) as c:
        c.headers["Authorization"] = f"Bearer {token}"
        yield c
    get_settings.cache_clear()
    queue.producer.cache_clear()


def weights(client: TestClient) -> dict[str, float]:
    cases = client.get("/api/v1/problems/tiny").json()["case_list"]
    return {c["name"]: c["weight"] for c in cases}


def test_api_refuses_a_split_without_weight_and_says_to_rescore(client):
    url = "/api/v1/admin/problems/tiny/cases/{}"
    before = weights(client)
    ok = client.patch(url.format("one"), json={"weight": 2.5})
    assert ok.status_code == 200, ok.text
    assert ok.json()["rescore_needed"] is True and "rescore" in ok.json()["message"]
    refused = client.patch(url.format("two"), json={"weight": 0})  # the only hidden case
    assert refused.status_code == 422
    assert "hidden cases of 'tiny' would weigh 0 in all" in refused.text
    assert weights(client) == {**before, "one": 2.5}


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert found, "the page has no CSRF field"
    return found.group(1)


def test_weights_form_refuses_a_split_without_weight(client):
    page = TestClient(client.app)
    token = csrf_of(page.get("/login").text)
    form = {"username": "admin", "password": PASSWORD, "csrf_token": token}
    assert page.post("/login", data=form, follow_redirects=False).status_code == 303

    def post(fields: dict[str, str]):
        token = csrf_of(page.get("/admin/problems/tiny").text)
        url = "/admin/problems/tiny/weights"
        return page.post(url, data={**fields, "csrf_token": token}, follow_redirects=False)

    before = weights(client)
    refused = post({"w:one": "0"})
    assert refused.status_code == 422 and "would weigh 0 in all" in refused.text
    assert weights(client) == before
    assert post({"w:one": "3"}).status_code == 303
    assert weights(client) == {**before, "one": 3.0}


def result(case: str, weight: float, score: float) -> CaseResult:
    return CaseResult(case, "public", weight, Verdict.OK, "", 10, 10, score)


def test_a_split_of_total_weight_zero_scores_as_if_every_case_weighed_one():
    results = [result("a", 0.0, 0.5), result("b", 0.0, 1.0)]
    assert problem_score(results, "public") == 75.0
    assert problem_score([result("a", 0.0, 0.5), result("b", 2.0, 1.0)], "public") == 100.0
