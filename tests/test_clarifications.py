"""Clarifications and announcements (api.actions.messages) over real HTTP and the CLI, on both
backends: a team's question is its own until the jury answers it to everyone; then
every team sees the question and the answer, never who asked. Announcements reach
every team. Bad input gets a clear refusal; everything lands in the audit log."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import threading
import time

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api import news
from api.live.message_feed import MessageFeed
from api.settings import Settings
from tests.service import VENV_BIN, Service, start_service
from tests.test_package import make_package
from tests.test_service_e2e import backends

SECRET = "is the capacity of case two 16 bytes for red only?"  # red's private question
PUBLIC = "may a planner read the whole case before answering?"


@pytest.fixture(scope="module", params=["embedded", "postgres+redis"])
def service(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("clarify")
    with backends(request.param) as (db_url, broker_url):
        svc = start_service(tmp, [make_package(tmp / "pkg")], db_url, broker_url)
        try:
            svc.red = svc.add_team("red", "rita")  # type: ignore[attr-defined]
            svc.blue = svc.add_team("blue", "bob")  # type: ignore[attr-defined]
            yield svc
        finally:
            svc.stop()


def texts(service: Service, token: str, path: str) -> str:
    reply = service.api("GET", path, token)
    assert reply.status_code == 200, reply.text
    return reply.text


def test_private_and_public_answers_and_announcements(service: Service) -> None:
    red, blue = service.red, service.blue  # type: ignore[attr-defined]
    asked = service.api("POST", "/api/v1/clarifications", red,
                        json={"question": SECRET, "problem": "tiny"})  # fmt: skip
    assert asked.status_code == 201, asked.text
    secret_id = asked.json()["id"]
    assert "team" not in asked.json()
    # Only red and the jury see it; the jury sees who asked.
    assert SECRET in texts(service, red, "/api/v1/clarifications")
    assert SECRET not in texts(service, blue, "/api/v1/clarifications")
    jury = service.api("GET", "/api/v1/admin/clarifications").json()
    assert [(m["text"], m["team"]) for m in jury] == [(SECRET, "red")]
    # A private answer: still red's alone.
    reply = service.api("POST", f"/api/v1/admin/clarifications/{secret_id}/answer",
                        json={"answer": "yes, 16", "audience": "team"})  # fmt: skip
    assert reply.status_code == 200, reply.text
    mine = service.api("GET", "/api/v1/clarifications", red).json()
    assert [(m["text"], m["answer"], m["audience"]) for m in mine] == [(SECRET, "yes, 16", "team")]
    for path in ("/api/v1/clarifications", "/api/v1/announcements"):
        assert SECRET not in texts(service, blue, path) and "yes, 16" not in texts(
            service, blue, path
        )
    # Through the CLI too.
    assert SECRET not in service.cli(blue, "clarifications", "--json")
    out = service.cli(blue, "clarify", PUBLIC)
    assert out.startswith("question #")
    public_id = int(out.split("#")[1].split()[0])
    assert PUBLIC not in texts(service, red, "/api/v1/clarifications")
    service.cli(service.admin_token, "answer", str(public_id), "yes, it may", "--to-all")
    # Answered to all: everyone sees question and answer, never who asked.
    seen_by_red = service.api("GET", "/api/v1/clarifications", red).json()
    shared = [m for m in seen_by_red if m["id"] == public_id]
    assert shared and shared[0]["answer"] == "yes, it may" and "team" not in shared[0]
    assert "blue" not in json.dumps(seen_by_red)
    # An announcement reaches every team.
    service.cli(service.admin_token, "announce", "case two was fixed", "--problem", "tiny")
    for token in (red, blue):
        got = json.loads(service.cli(token, "announcements", "--json"))
        assert [(m["text"], m["problem"]) for m in got] == [("case two was fixed", "tiny")]
    assert SECRET not in service.cli(blue, "clarifications")
    # The page: each viewer sees what the API shows them (the jury: who asked).
    assert SECRET not in texts(service, blue, "/clarifications")
    page = texts(service, red, "/clarifications")
    assert SECRET in page and "yes, 16" in page and "case two was fixed" in page
    jury_page = texts(service, service.admin_token, "/clarifications")
    assert "asked by red" in jury_page and "asked by blue" in jury_page
    # Exports: a team's holds what it may read; the jury's every question and its team.
    mine = texts(service, blue, "/api/v1/exports/clarifications?format=csv")
    assert SECRET not in mine and PUBLIC in mine and "case two was fixed" in mine
    assert mine.splitlines()[0].startswith("id,kind,team,problem,text")
    jury_csv = texts(service, service.admin_token, "/api/v1/admin/exports/clarifications")
    assert SECRET in jury_csv and ",red," in jury_csv and ",blue," in jury_csv
    actions = [e["action"] for e in service.api("GET", "/api/v1/admin/audit").json()]
    for action in ("clarification_asked", "clarification_answered", "announcement"):
        assert action in actions


def test_bad_requests_are_refused_plainly(service: Service) -> None:
    red = service.red  # type: ignore[attr-defined]
    cases = [
        ("POST", "/api/v1/clarifications", red, {"question": "  "}, 400, "empty"),
        ("POST", "/api/v1/clarifications", red, {"question": "x" * 4001}, 400, "at most 4000"),
        ("POST", "/api/v1/clarifications", red, {"question": "a\x00b"}, 400, "NUL"),
        ("POST", "/api/v1/clarifications", red, {"question": "q", "problem": "nope"}, 404, "nope"),
        ("POST", "/api/v1/clarifications", None, {"question": "q"}, 403, "only a team"),
        ("POST", "/api/v1/admin/clarifications/1/answer", red, {"answer": "a"}, 403, "organizer"),
        ("POST", "/api/v1/admin/clarifications/999999/answer", None, {"answer": "a"}, 404, ""),
        ("POST", "/api/v1/admin/announcements", red, {"text": "hi"}, 403, "organizer"),
        ("POST", "/api/v1/admin/announcements", None, {"text": ""}, 400, "empty"),
    ]
    for method, path, token, body, status, words in cases:
        reply = service.api(method, path, token, json=body)  # None: the organizer's token
        assert reply.status_code == status, (path, body, reply.text)
        assert words in reply.text, reply.text
    bad = service.api("POST", "/api/v1/admin/clarifications/1/answer",
                      json={"answer": "a", "audience": "some"})  # fmt: skip
    assert bad.status_code == 422, bad.text
    anon = service.api("GET", "/api/v1/clarifications", "not-a-token")
    assert anon.status_code == 401


def test_a_team_cannot_flood_the_jury(service: Service) -> None:
    token = service.add_team("green", "gus")
    codes = [
        service.api("POST", "/api/v1/clarifications", token, json={"question": f"q{k}"}).status_code
        for k in range(21)
    ]
    assert codes == [201] * 20 + [429], codes


BODIES = st.dictionaries(
    st.sampled_from(["question", "problem", "x"]),
    st.one_of(st.text(max_size=30), st.integers(), st.none()),
    max_size=3,
)
QUICK = settings(max_examples=25, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip


@QUICK
@given(body=BODIES)
def test_any_question_body_gets_an_answer_not_a_crash(service: Service, body: dict) -> None:
    blue = service.blue  # type: ignore[attr-defined]
    reply = service.api("POST", "/api/v1/clarifications", blue, json=body)
    assert reply.status_code in (201, 400, 404, 422, 429), reply.text


class Live:
    """One open GET /api/v1/contest/events, read on a thread: its events as they come."""

    def __init__(self, service: Service, token: str, last_id: str = ""):
        self.events: list[tuple[str, str, str]] = []  # (id, event, data)
        self.ready = threading.Event()
        headers = {"Authorization": f"Bearer {token}"} | (
            {"Last-Event-ID": last_id} if last_id else {}
        )
        self.client = httpx.Client(timeout=httpx.Timeout(30, read=60))
        self.thread = threading.Thread(target=self._read, args=(service.url, headers), daemon=True)
        self.thread.start()
        assert self.ready.wait(20), "the stream did not open"

    def _read(self, url: str, headers: dict) -> None:
        with (
            contextlib.suppress(httpx.HTTPError),
            self.client.stream("GET", f"{url}/api/v1/contest/events", headers=headers) as reply,
        ):
            assert reply.status_code == 200
            frame: dict[str, str] = {}
            for line in reply.iter_lines():
                if line:
                    key, _, value = line.partition(": ")
                    frame[key] = value
                    continue
                if "event" in frame:
                    self.events.append((frame.get("id", ""), frame["event"], frame.get("data", "")))
                    self.ready.set()
                frame = {}

    def messages(self) -> list[dict]:
        return [json.loads(d) for _, e, d in self.events if e == "message"]

    def wait_for(self, check, timeout: float = 20.0) -> list[dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check(self.messages()):
                return self.messages()
            time.sleep(0.05)
        raise AssertionError(f"not heard in {timeout} s: {self.messages()}")

    def close(self) -> None:
        self.client.close()


def test_questions_answers_and_announcements_arrive_live(service: Service) -> None:
    """Each open stream hears what its reader may read, at once; another team's private
    question and answer never reach it; a reconnect with Last-Event-ID gets what it
    missed."""
    red, blue = service.add_team("teal", "tim"), service.add_team("pink", "pia")
    streams = {who: Live(service, token) for who, token in
               (("red", red), ("blue", blue), ("jury", service.admin_token))}  # fmt: skip
    try:
        secret = "live: may our planner keep state between cases?"
        asked = service.api("POST", "/api/v1/clarifications", red, json={"question": secret})
        assert asked.status_code == 201, asked.text
        qid = asked.json()["id"]
        jury = streams["jury"].wait_for(lambda ms: any(m["id"] == qid for m in ms))
        assert [m["team"] for m in jury if m["id"] == qid] == ["teal"]
        streams["red"].wait_for(lambda ms: any(m["id"] == qid for m in ms))
        private = {"answer": "live: no, each case is a new process", "audience": "team"}
        service.api("POST", f"/api/v1/admin/clarifications/{qid}/answer", json=private)
        streams["red"].wait_for(lambda ms: any(m["answer"] for m in ms if m["id"] == qid))
        service.api("POST", "/api/v1/admin/announcements", json={"text": "live: all is well"})
        for stream in streams.values():
            stream.wait_for(lambda ms: any(m["text"] == "live: all is well" for m in ms))
        blue_heard = json.dumps(streams["blue"].events)
        assert secret not in blue_heard and "each case is a new process" not in blue_heard
        assert "teal" not in json.dumps(streams["red"].events)  # no team names for teams
        # Blue reconnects after its last event: the next announcement only, no repeats.
        last_id = streams["blue"].events[-1][0]
        streams["blue"].close()
        service.api("POST", "/api/v1/admin/announcements", json={"text": "live: while away"})
        streams["jury"].wait_for(lambda ms: any(m["text"] == "live: while away" for m in ms))
        again = streams["blue2"] = Live(service, blue, last_id)
        # Another API process's feed cannot replay: there the stream starts from now.
        if again.events[0][0].split(":")[0] == last_id.split(":")[0]:
            heard = again.wait_for(lambda ms: any(m["text"] == "live: while away" for m in ms))
            assert [m["text"] for m in heard] == ["live: while away"]
    finally:
        for stream in streams.values():
            stream.close()


@given(st.text(max_size=60))
def test_a_messages_last_event_id_of_any_text_is_read_or_ignored(header: str) -> None:
    feed = MessageFeed(Settings())
    assert feed.resume_from(header) is None
    assert feed.resume_from(f"{feed.name}:\u00b2") is None and feed.resume_from("x:1") is None
    assert feed.resume_from(feed.event_id(12)) == 12


def test_a_messages_event_id_counts_nothing() -> None:
    """Ids are random marks, not counts: a team cannot tell from two ids how many
    changes it was not shown between them; old marks are forgotten."""
    from api.live import message_feed

    feed = MessageFeed(Settings())
    ids = [feed.event_id(seq) for seq in range(3)]
    assert len(set(ids)) == 3 and feed.event_id(1) == ids[1]
    assert not any(id_.endswith((":0", ":1", ":2")) for id_ in ids)
    for seq in range(message_feed.MARKS + 5):
        feed.event_id(seq + 10)
    assert feed.resume_from(ids[0]) is None and len(feed.positions) == message_feed.MARKS


@given(st.integers(0, 2**31), st.booleans())
def test_news_of_the_messages_goes_round(sub_id: int, messages: bool) -> None:
    item = news.News(sub_id, messages=messages)
    assert news.parse(news.message(item)) == item


def test_the_cli_follows_the_messages_live(service: Service) -> None:
    """`memorace messages --count 1 --json` prints the next announcement and exits; its
    stream opens some time after it starts, so the jury announces until it hears one."""
    token = service.blue  # type: ignore[attr-defined]
    env = {**os.environ, "MEMORACE_URL": service.url, "MEMORACE_TOKEN": token}
    command = [str(VENV_BIN / "memorace"), "messages", "--count", "1", "--json"]
    pipe = subprocess.PIPE
    cli = subprocess.Popen(command, env=env, stdout=pipe, stderr=pipe, text=True)
    try:
        for n in range(40):
            service.api("POST", "/api/v1/admin/announcements", json={"text": f"cli follow {n}"})
            with contextlib.suppress(subprocess.TimeoutExpired):
                cli.wait(0.5)
                break
        out, err = cli.communicate(timeout=10)
    finally:
        cli.kill()
    assert cli.returncode == 0, err
    heard = json.loads(out)
    assert heard["kind"] == "announcement" and heard["text"].startswith("cli follow ")
