"""api.reads.single_flight: concurrent misses of the same answer share one computation (a herd
after a clear asks the database once), a failed or cleared one is not shared, and
api.reads.readcache and the leaderboard use it. Threads, no timing asserted: the first
computation waits until every other caller has joined it."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from api.reads import readcache, single_flight

HERD = 8


def _herd(monkeypatch, call: Callable[[Callable[[], str]], str], fail: bool = False):
    """HERD threads call `call(make)` at once; the first make() waits for the others to
    join its flight. Returns (make's calls, what each thread got or raised)."""
    joined = threading.Semaphore(0)
    real_join = single_flight.join

    def counting_join(key):
        found = real_join(key)
        joined.release()
        return found

    monkeypatch.setattr(single_flight, "join", counting_join)
    calls: list[int] = []

    def make() -> str:
        calls.append(1)
        if len(calls) == 1:
            for _ in range(HERD):
                joined.acquire()  # everyone is in (or waiting on) this flight
            if fail:
                raise RuntimeError("the database hiccuped")
        return "answer"

    got: list[object] = []

    def run() -> None:
        try:
            got.append(call(make))
        except RuntimeError as exc:
            got.append(exc)

    threads = [threading.Thread(target=run) for _ in range(HERD)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return len(calls), got


def test_a_herd_computes_once(monkeypatch) -> None:
    calls, got = _herd(monkeypatch, lambda make: single_flight.shared("k", make))
    assert calls == 1 and got == ["answer"] * HERD
    assert single_flight._flights == {}


def test_a_failed_flight_is_not_shared(monkeypatch) -> None:
    calls, got = _herd(monkeypatch, lambda make: single_flight.shared("k", make), fail=True)
    assert calls == HERD  # the first failed: each other computes its own
    assert sum(isinstance(g, RuntimeError) for g in got) == 1
    assert got.count("answer") == HERD - 1


def test_a_herd_of_cache_misses_asks_once(monkeypatch) -> None:
    monkeypatch.setattr(readcache, "STALENESS_S", 60.0)
    readcache.clear()
    scope = (readcache.LISTS, 1)
    calls, got = _herd(monkeypatch, lambda make: readcache.cached("page", scope, make))
    assert calls == 1 and got == ["answer"] * HERD


def test_a_value_cleared_while_computed_is_not_handed_to_the_herd(monkeypatch) -> None:
    """A clear during the first computation (a write one of the waiters may have
    made): its value is not kept, and each waiter computes its own."""
    monkeypatch.setattr(readcache, "STALENESS_S", 60.0)
    readcache.clear()
    scope = (readcache.LISTS, 1)

    def cleared(make):
        def clearing() -> str:
            value = make()
            readcache.clear(scope)
            return value

        return readcache.cached("page", scope, clearing)

    calls, got = _herd(monkeypatch, cleared)
    assert calls > 1 and got == ["answer"] * HERD


@pytest.mark.parametrize("fail", [False, True])
def test_flights_land_whatever_happens(monkeypatch, fail) -> None:
    _herd(monkeypatch, lambda make: single_flight.shared(("board", 1), make), fail=fail)
    assert single_flight._flights == {}
