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

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.limit)
        if scope["path"].endswith("/events"):
            await self._stream(scope, receive, send, self._slots)
            return
        async with self._slots:
            await self.app(scope, receive, send)

    async def _stream(
        self, scope: Scope, receive: Receive, send: Send, slots: asyncio.Semaphore
    ) -> None:
        """Holds a slot until the response starts (the route's session is closed by
        then: api.deps commits before the response)."""
        await slots.acquire()
        held = True

        async def started(message: Message) -> None:
            nonlocal held
            if held and message["type"] == "http.response.start":
                held = False
                slots.release()
            await send(message)

        try:
            await self.app(scope, receive, started)
        finally:
            if held:
                slots.release()
