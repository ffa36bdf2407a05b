"""Client.follow(): the event stream, its resumption with Last-Event-ID, and the
fallback to polling. HTTP goes through httpx.MockTransport."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from client.errors import ClientError
from client.http import RECONNECTS
from tests.client_fakes import mock_client, result, sse, submission


def test_follow_yields_stream_events_until_end() -> None:
    final = submission("done", [result("a"), result("b")])
    body = b": hello\n\n" + b"".join(
        [
            sse("status", {"status": "running", "cases_done": 0, "cases_total": 2}),
            sse("case", {**result("a"), "cases_done": 1, "cases_total": 2}),
            sse("case", {**result("b"), "cases_done": 2, "cases_total": 2}),
            sse("end", final),
        ]
    )

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/api/v1/submissions/5/events"
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    got = list(mock_client(handler).follow(5))
    assert [e for e, _ in got] == ["status", "case", "case", "end"]
    assert got[-1][1] == final


def test_dropped_stream_falls_back_to_polling_without_repeats() -> None:
    polls = iter(
        [
            submission("running", [result("a")]),
            submission("done", [result("a"), result("b")]),
        ]
    )

    def cut_stream() -> Iterator[bytes]:
        yield sse("case", {**result("a"), "cases_done": 1, "cases_total": 2})
        raise httpx.RemoteProtocolError("peer closed connection")

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/events"):
            return httpx.Response(200, content=cut_stream())
        return httpx.Response(200, json=next(polls))

    got = list(mock_client(handler).follow(5))
    assert [(e, d.get("case")) for e, d in got] == [
        ("case", "a"),  # from the stream
        ("status", None),  # first poll: running, nothing new
        ("case", "b"),  # second poll
        ("status", None),  # running -> done
        ("end", None),
    ]
    assert got[-1][1]["status"] == "done"


def test_stream_closed_without_end_also_falls_back() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/events"):
            return httpx.Response(200, content=b": only a comment\n\n")
        return httpx.Response(200, json=submission("error", []))

    got = list(mock_client(handler).follow(5))
    assert [e for e, _ in got] == ["status", "end"]


def test_a_stream_refused_by_the_servers_cap_falls_back_to_polling() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/events"):
            return httpx.Response(429, json={"detail": "too many open streams"})
        return httpx.Response(200, json=submission("done", [result("a")]))

    got = list(mock_client(handler).follow(5))
    assert [e for e, _ in got][-1] == "end" and got[-1][1]["status"] == "done"


def test_follow_raises_on_a_4xx_stream() -> None:
    client = mock_client(lambda r: httpx.Response(403, json={"detail": "not your submission"}))
    with pytest.raises(ClientError, match="not your submission"):
        list(client.follow(5))


def test_a_dropped_stream_resumes_from_the_last_event_id_without_polling() -> None:
    running = {"status": "running", "cases_done": 1, "cases_total": 2}
    final = submission("done", [result("a"), result("b")])
    asked: list[str | None] = []

    def first() -> Iterator[bytes]:
        yield sse("status", running, "7:1") + sse("case", {**result("a"), **running}, "7:2")
        raise httpx.RemoteProtocolError("peer closed connection")

    def resumed() -> Iterator[bytes]:
        # As the server does: the status again, then only the cases after 7:2 (and a
        # repeat of a, which a server behind a replaying proxy might send).
        yield sse("status", running, "7:3") + sse("case", {**result("a"), **running}, "7:2")
        yield sse("case", {**result("b"), "cases_done": 2}, "7:4") + sse("end", final, "7:5")

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path.endswith("/events"), "polled instead of resuming"
        asked.append(request.headers.get("last-event-id"))
        return httpx.Response(200, content=first() if len(asked) == 1 else resumed())

    got = list(mock_client(handler).follow(5))
    assert asked == [None, "7:2"]
    assert [(e, d.get("case")) for e, d in got] == [
        ("status", None),
        ("case", "a"),
        ("status", None),
        ("case", "b"),
        ("end", None),
    ]


def test_a_stream_that_keeps_dropping_without_progress_ends_in_polling() -> None:
    streams = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal streams
        if request.url.path.endswith("/events"):
            streams += 1
            return httpx.Response(503)
        return httpx.Response(200, json=submission("done", [result("a")]))

    got = list(mock_client(handler).follow(5))
    assert streams == RECONNECTS + 1
    assert [e for e, _ in got] == ["case", "status", "end"]
