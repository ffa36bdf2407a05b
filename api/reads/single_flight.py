"""One computation for a herd: the requests that miss the same kept answer at the same
time (all of them, right after news cleared it, or when a board moved) wait for the
first one's result instead of each asking the database the same thing. At 300 clients
the median read took 5 ms and the 99th percentile 600-900 ms: every clear of a hot
answer sent every reader of that moment to the database at once.

A waiter waits at most WAIT_S; when the first one fails or takes longer, it computes
its own, so a herd never waits on a stuck request.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")
WAIT_S = 2.0


class Flight:
    """One computation in progress, and its result once it has landed."""

    __slots__ = ("done", "ok", "value")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.ok = False
        self.value: Any = None


_flights: dict[Hashable, Flight] = {}
_lock = threading.Lock()


def join(key: Hashable) -> tuple[Flight, bool]:
    """The flight computing `key`, and whether the caller leads it (starts it now)."""
    with _lock:
        flight = _flights.get(key)
        if flight is not None:
            return flight, False
        flight = _flights[key] = Flight()
        return flight, True


def land(key: Hashable, flight: Flight) -> None:
    """The leader is done (with flight.ok and flight.value set if it succeeded)."""
    with _lock:
        if _flights.get(key) is flight:
            del _flights[key]
    flight.done.set()


def shared(key: Hashable, make: Callable[[], T]) -> T:
    """make()'s value, computed once for the callers that ask for `key` at the same
    time. Only for values that are the same for each of them (the key says all)."""
    flight, leader = join(key)
    if not leader:
        if flight.done.wait(WAIT_S) and flight.ok:
            return flight.value  # type: ignore[no-any-return]
        return make()
    try:
        flight.value = make()
        flight.ok = True
        return flight.value  # type: ignore[no-any-return]
    finally:
        land(key, flight)
