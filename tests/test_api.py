"""The API's rules through its HTTP interface (in-process ASGI client, SQLite, the
embedded broker; no worker is needed: nothing here waits for a judging)."""

from __future__ import annotations

import io
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api import queue
from api.settings import get_settings
from tests.test_package import make_package

PLANNER = b"print('hello')\n"


@pytest.fixture
def client(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMORACE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MEMORACE_RATE_LIMIT", "3")
    monkeypatch.setenv("MEMORACE_UPLOAD_LIMIT_BYTES", "4096")
    get_settings.cache_clear()
    queue.producer.cache_clear()
    from api.app import create_app
    from api.bootstrap import bootstrap

    token = bootstrap(get_settings(), "admin", [make_package(tmp_path / "pkg")])
    with TestClient(create_app()) as c:
        c.headers["Authorization"] = f"Bearer {token}"
        yield c
    get_settings.cache_clear()
    queue.producer.cache_clear()


def contestant(client: TestClient, team: str = "red", user: str = "alice") -> dict[str, str]:
    assert client.post("/api/v1/admin/teams", json={"name": team}).status_code == 201
    body = {"username": user, "password": "password123", "team": team}
    assert client.post("/api/v1/admin/users", json=body).status_code == 201
    token = client.post("/api/v1/admin/tokens", json={"username": user}).json()["token"]
    return {"Authorization": f"Bearer {token}"}


def submit(client: TestClient, headers: dict[str, str], data: bytes = PLANNER, name: str = "p.py"):
    return client.post(
        "/api/v1/submissions",
        headers=headers,
        data={"problem": "tiny"},
        files={"file": (name, data)},
    )


def test_submission_is_queued_with_position_and_identical_bytes_are_reused(client):
    alice = contestant(client)
    first = submit(client, alice)
    assert first.status_code == 201, first.text
    body = first.json()
    assert body["status"] == "queued" and body["queue_position"] == 1
    assert body["status_detail"] and body["cases_total"] == 2
    again = submit(client, alice, name="renamed.py")
    assert again.status_code == 200 and again.json()["reused"] and again.json()["id"] == body["id"]
    second = submit(client, alice, PLANNER + b"# v2\n").json()
    assert second["queue_position"] == 2


def test_rate_limit_and_upload_limits(client):
    alice = contestant(client)
    for i in range(3):
        assert submit(client, alice, PLANNER + f"#{i}".encode()).status_code == 201
    reply = submit(client, alice, PLANNER + b"#4")
    assert reply.status_code == 429 and "limit is 3" in reply.json()["detail"]
    bob = contestant(client, "blue", "bob")
    reply = submit(client, bob, b"x" * 5000)
    assert reply.status_code == 413 and "more than 4 KiB (4096 bytes)" in reply.json()["detail"]
    reply = submit(client, bob, PLANNER, name="../../etc/passwd")
    assert reply.status_code == 415


def test_other_teams_submissions_are_invisible(client):
    alice, bob = contestant(client), contestant(client, "blue", "bob")
    sub = submit(client, alice).json()
    assert client.get(f"/api/v1/submissions/{sub['id']}", headers=bob).status_code == 404
    assert client.get(f"/api/v1/submissions/{sub['id']}", headers=alice).status_code == 200
    assert client.get("/api/v1/submissions", headers=bob).json() == []


def test_contest_window_blocks_submissions(client):
    alice = contestant(client)
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert client.put("/api/v1/admin/contest", json={"start_at": later}).status_code == 200
    reply = submit(client, alice)
    assert reply.status_code == 403 and "starts at" in reply.json()["detail"]
    earlier = (datetime.now(UTC) - timedelta(hours=2)).isoformat()
    past = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    reply = client.put("/api/v1/admin/contest", json={"start_at": earlier, "end_at": past})
    assert reply.status_code == 200
    assert "ended" in submit(client, alice).json()["detail"]
    bad = client.put("/api/v1/admin/contest", json={"start_at": past, "end_at": earlier})
    assert bad.status_code == 400 and "must end after" in bad.json()["detail"]


def test_disqualified_team_cannot_submit(client):
    alice = contestant(client)
    assert client.post("/api/v1/admin/disqualify", json={"team": "red"}).status_code == 200
    reply = submit(client, alice)
    assert reply.status_code == 403 and "disqualified" in reply.json()["detail"]


def _zip(root: Path) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                z.write(path, path.relative_to(root.parent))
    return buf.getvalue()


def import_package(client: TestClient, content: bytes, name: str = "tiny.zip") -> dict:
    """POST the package (202 and a job), run the job as a worker would, its final state."""
    from api.actions.imports import run_job

    reply = client.post("/api/v1/admin/problems", files={"file": (name, content)})
    assert reply.status_code == 202, reply.text
    job = reply.json()
    assert job["status"] == "queued" and reply.headers["location"] == job["url"]
    run_job(get_settings(), job["id"])
    return client.get(job["url"]).json()


def test_problem_import_makes_a_new_version_and_rejects_bad_packages(client, tmp_path):
    pkg = make_package(tmp_path / "v2")
    (pkg / "statement.md").write_text("# Tiny, second edition\n")
    job = import_package(client, _zip(pkg))
    assert (job["status"], job["problem"], job["version"], job["cases"]) == ("done", "tiny", 2, 2)
    assert client.get("/api/v1/problems/tiny").json()["version"] == 2
    (pkg / "problem.toml").write_text((pkg / "problem.toml").read_text() + "\nbogus = 1\n")
    job = import_package(client, _zip(pkg))
    assert job["status"] == "failed" and "problem.toml" in job["detail"]
    job = import_package(client, b"not a zip")
    assert job["status"] == "failed" and "zip" in job["detail"]
    assert not any((get_settings().imports).iterdir())  # every upload went with its job
    audit = client.get("/api/v1/admin/audit").json()
    assert [e["action"] for e in audit].count("import_problem") == 2  # bootstrap + v2


def test_public_cases_download_and_hidden_ones_do_not(client):
    alice = contestant(client)
    problem = client.get("/api/v1/problems/tiny", headers=alice).json()
    public = [c["name"] for c in problem["case_list"] if c["split"] == "public"]
    hidden = [c for c in problem["case_list"] if c["split"] == "hidden"]
    assert all(c["lower_bound"] is None for c in hidden)
    assert client.get(f"/api/v1/problems/tiny/cases/{public[0]}").text.startswith("id,")
    reply = client.get(f"/api/v1/problems/tiny/cases/{hidden[0]['name']}")
    assert reply.status_code == 404


def test_health_and_metrics(client):
    assert client.get("/healthz").json()["ok"] is True
    assert "list" in client.get("/healthz").json()["workers"]  # the organizer's token


def test_health_shows_counts_to_anyone_and_worker_names_to_organizers_only(client):
    anonymous = client.build_request("GET", "/healthz")
    del anonymous.headers["Authorization"]
    alice = contestant(client)
    for reply in (
        client.send(anonymous),
        client.get("/healthz", headers=alice),
        client.get("/healthz", headers={"Authorization": "Bearer mr_wrong"}),
    ):
        assert reply.status_code == 200, reply.text
        assert set(reply.json()["workers"]) == {"alive", "busy", "idle", "heartbeat_s"}
    text = client.get("/metrics").text
    assert "memorace_queue_depth" in text and "memorace_judging_latency_seconds" in text


def test_replay_is_chosen_per_problem(monkeypatch):
    from api.settings import Settings

    monkeypatch.setenv("MEMORACE_REPLAY", "train-offload, mini")
    monkeypatch.setenv("MEMORACE_REPLAY_BACKEND", "cupy")
    chosen = Settings()
    assert chosen.replay_for("train-offload") == "cupy" and chosen.replay_for("mini") == "cupy"
    assert chosen.replay_for("gpt2-train") is None
    monkeypatch.setenv("MEMORACE_REPLAY", "all")
    assert Settings().replay_for("gpt2-train") == "cupy"
    monkeypatch.setenv("MEMORACE_REPLAY", "")
    assert Settings().replay_for("gpt2-train") is None
