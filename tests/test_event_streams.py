"""Live event streams are capped, over real HTTP on both backends.

Each open stream polled the database, so one contestant holding hundreds of them froze
the API (the leaderboard timed out). Streams are cheap now (api.live.broadcast), but still
bounded: an account holds at most MEMORACE_EVENT_STREAMS_PER_USER streams (here 8) and
an API process serves at most MEMORACE_EVENT_STREAMS_PER_PROCESS (here 12); one more
is 429 with Retry-After, a slot is free again once its client hangs up, and the
leaderboard answers quickly while a contestant holds its most. No worker runs: a
queued submission's stream stays open.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from tests.service import Service, small_package, start_service, wait_for
from tests.test_service_e2e import backends

# Timing or the whole host: make test runs it alone, after the rest.
pytestmark = pytest.mark.serial

PER_USER, PER_PROCESS = 8, 12  # small caps for the test (defaults: 200, 5000)


@pytest.fixture(scope="module", params=["embedded", "postgres+redis"])
def service(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("streams")
    env = {
        "MEMORACE_EVENT_STREAMS_PER_USER": str(PER_USER),
        "MEMORACE_EVENT_STREAMS_PER_PROCESS": str(PER_PROCESS),
    }
    with backends(request.param) as (db_url, broker_url):
        svc = start_service(tmp, [small_package(tmp)], db_url, broker_url, "local", env)
        try:
            yield svc
        finally:
            svc.stop()


class Streams:
    """Event streams held open by one client (each on its own connection)."""

    def __init__(self, service: Service, token: str, sub_id: int):
        self.url = f"{service.url}/api/v1/submissions/{sub_id}/events"
        self.client = httpx.Client(
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=0),
        )
        self.open: list[httpx.Response] = []

    def add(self) -> httpx.Response:
        """Open one more: the reply (kept open when it is a stream)."""
        reply = self.client.send(self.client.build_request("GET", self.url), stream=True)
        if reply.status_code == 200:
            self.open.append(reply)
        else:
            reply.read()
            reply.close()
        return reply

    def close(self, n: int | None = None) -> None:
        """Hang up n streams (all by default)."""
        for _ in range(len(self.open) if n is None else n):
            self.open.pop().close()

    def shut(self) -> None:
        self.close()
        self.client.close()


@contextmanager
def streams(service: Service, token: str, sub_id: int) -> Iterator[Streams]:
    held = Streams(service, token, sub_id)
    try:
        yield held
    finally:
        held.shut()


def queued_submission(service: Service, team: str) -> tuple[str, int]:
    token = service.add_team(team, f"{team}-user")
    planner = service.data_dir.parent / f"{team}.py"
    planner.write_text(f"# {team}\nraise SystemExit(0)\n")
    return token, service.submit(token, "mini-gpt2", planner)["id"]


def refused(reply: httpx.Response, why: str) -> bool:
    assert reply.status_code == 429, f"the extra stream got {reply.status_code}"
    assert int(reply.headers["retry-after"]) > 0
    return why in reply.json()["detail"]


def leaderboard_ms(service: Service, n: int = 20) -> float:
    """The median time of n anonymous leaderboard requests, in ms."""
    times = []
    for _ in range(n):
        start = time.perf_counter()
        reply = httpx.get(f"{service.url}/api/v1/leaderboard/mini-gpt2", timeout=30)
        times.append((time.perf_counter() - start) * 1000)
        assert reply.status_code == 200, reply.text
    return statistics.median(times)


def test_one_account_holds_at_most_its_streams(service: Service) -> None:
    token, sub_id = queued_submission(service, "red")
    with streams(service, token, sub_id) as held:
        for _ in range(PER_USER):
            assert held.add().status_code == 200
        assert refused(held.add(), "the most one account may hold")
        median = leaderboard_ms(service)
        print(f"\nleaderboard median with {PER_USER} streams held: {median:.1f} ms")
        assert median < 1000, median  # ~10 ms unloaded; 15 s before the cap (400 streams)

        # A stream whose client hangs up frees its slot (the server notices the hang-up).
        held.close(3)
        for _ in range(3):
            reply = wait_for(lambda: held.add().status_code == 200, 15, "a freed slot", 0.3)
            assert reply
        assert refused(held.add(), "the most one account may hold")
    # All hung up: the account may open its most again.
    with streams(service, token, sub_id) as held:
        wait_for(lambda: held.add().status_code == 200 and len(held.open) == PER_USER, 15,
                 "every slot freed", 0.3)  # fmt: skip
        assert refused(held.add(), "the most one account may hold")


def test_the_process_serves_at_most_its_streams(service: Service) -> None:
    red, red_sub = queued_submission(service, "green")
    blue, blue_sub = queued_submission(service, "blue")
    with streams(service, red, red_sub) as reds, streams(service, blue, blue_sub) as blues:
        for _ in range(PER_USER):
            assert reds.add().status_code == 200
        for _ in range(PER_PROCESS - PER_USER):
            assert blues.add().status_code == 200
        assert refused(blues.add(), "the server is serving 12 live event streams")
        median = leaderboard_ms(service)
        print(f"\nleaderboard median with {PER_PROCESS} streams held: {median:.1f} ms")
        assert median < 1000, median
        # Another account's stream is not refused for long: a slot frees when one ends.
        reds.close(1)
        wait_for(lambda: blues.add().status_code == 200, 15, "a freed slot", 0.3)
    # Streams of an ended judging end at once and hold nothing: a 404 takes no slot.
    missing = httpx.get(
        f"{service.url}/api/v1/submissions/999999/events",
        headers={"Authorization": f"Bearer {red}"},
        timeout=30,
    )
    assert missing.status_code == 404
