"""A bound on the requests inside one API process at once, below its connection pool.

A request takes a pooled connection in one threadpool hop (the token check) and gives
it back in another (the session's close), and waits for a free thread in between. With
more requests in flight than connections, every thread can end up waiting for a
connection that only a request waiting for a thread would return: nothing moves until
the pool's 30 s timeout (measured: 100 clients, one process, 40 % of requests failed).
Requests past the bound wait here, on the event loop, holding nothing.

A live event stream counts only until its response starts: opening one checks the
token and the submission with pooled connections (a reconnect storm of 2,000 streams
at once, let through unbounded, timed out 748 requests on the pool and opened more
connections than PostgreSQL allowed), then it waits on the broadcaster for minutes,
holding no connection.
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class InFlight:
    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit
        self._slots: asyncio.Semaphore | None = None  # made on the server's loop
        # Streams being opened take at most half the slots: in a reconnect storm the
        # leaderboard and the pages still get in.
        self._opening: asyncio.Semaphore | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self._slots is None or self._opening is None:
            self._slots = asyncio.Semaphore(self.limit)
            self._opening = asyncio.Semaphore(max(self.limit // 2, 1))
        if scope["path"].endswith("/events"):
            await self._stream(scope, receive, send, [self._opening, self._slots])
            return
        async with self._slots:
            await self.app(scope, receive, send)

    async def _stream(
        self, scope: Scope, receive: Receive, send: Send, gates: list[asyncio.Semaphore]
    ) -> None:
        """Holds its gates until the response starts (the route's session is closed by
        then: api.access.deps commits before the response)."""
        held: list[asyncio.Semaphore] = []

        def let_go() -> None:
            while held:
                held.pop().release()

        async def started(message: Message) -> None:
            if message["type"] == "http.response.start":
                let_go()
            await send(message)

        try:
            for gate in gates:
                await gate.acquire()
                held.append(gate)
            await self.app(scope, receive, started)
        finally:
            let_go()
