"""The metrics secret (MEMORACE_METRICS_TOKEN): Prometheus reads /metrics with it and
nothing else, so no organizer's token sits in a scraper's credentials file. An
organizer's token still reads /metrics; a contestant's, a wrong or a near-miss secret
do not; a short secret is refused when the service starts."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from api import queue
from api.settings import METRICS_TOKEN_MIN, Settings, get_settings
from tests.test_api import contestant
from tests.test_package import make_package

SECRET = "m" * 8 + "0123456789abcdef0123456789abcdef"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("metrics-token")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("MEMORACE_DATA_DIR", str(tmp / "data"))
        env.setenv("MEMORACE_METRICS_TOKEN", SECRET)
        get_settings.cache_clear()
        queue.producer.cache_clear()
        from api.app import create_app
        from api.bootstrap import bootstrap

        organizer = bootstrap(get_settings(), "admin", [make_package(tmp / "pkg")])
        with TestClient(create_app()) as client:
            client.headers["Authorization"] = f"Bearer {organizer}"  # for tests.test_api.contestant
            yield client, {"Authorization": f"Bearer {organizer}"}
        get_settings.cache_clear()
        queue.producer.cache_clear()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_the_secret_reads_metrics_and_nothing_else(served):
    client, organizer = served
    reply = client.get("/metrics", headers=bearer(SECRET))
    assert reply.status_code == 200 and "memorace_queue_depth" in reply.text
    assert client.get("/metrics", headers=organizer).status_code == 200  # still
    for path in ("/api/v1/admin/tokens", "/api/v1/problems", "/api/v1/submissions"):
        refused = client.get(path, headers=bearer(SECRET))
        assert refused.status_code == 401, (path, refused.status_code)
    health = client.get("/healthz", headers=bearer(SECRET)).json()
    assert "list" not in health["workers"]  # worker names are for organizers only


def test_others_do_not_read_metrics(served):
    client, _ = served
    alice = contestant(client)
    assert client.get("/metrics", headers=alice).status_code == 403
    for wrong in (SECRET[:-1], SECRET + "x", SECRET.upper(), ""):
        reply = client.get("/metrics", headers=bearer(wrong))
        assert reply.status_code == 401, (wrong, reply.status_code)
        assert "memorace_queue_depth" not in reply.text
    assert client.get("/metrics", headers={"Authorization": f"Basic {SECRET}"}).status_code == 401


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(header=st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=80))
@example(header=f"Bearer {SECRET}")
@example(header=f"bearer  {SECRET} ")
@example(header=f"Bearer {SECRET[:-1]}")
def test_any_authorization_header_gets_a_plain_answer(served, header):
    client, _ = served
    reply = client.get("/metrics", headers={"Authorization": header})
    scheme, _, token = header.partition(" ")
    ours = scheme.lower() == "bearer" and token.strip() == SECRET
    assert reply.status_code == (200 if ours else 401), (header, reply.status_code)


def test_a_short_secret_is_refused_at_start(monkeypatch):
    monkeypatch.setenv("MEMORACE_METRICS_TOKEN", "x" * (METRICS_TOKEN_MIN - 1))
    with pytest.raises(ValueError, match="at least 32 characters"):
        Settings()
    monkeypatch.setenv("MEMORACE_METRICS_TOKEN", "x" * METRICS_TOKEN_MIN)
    assert Settings().metrics_token == "x" * METRICS_TOKEN_MIN
