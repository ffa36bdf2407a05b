"""A bound on the requests inside one API process at once, below its connection pool.

A request takes a pooled connection in one threadpool hop (the token check) and gives
it back in another (the session's close), and waits for a free thread in between. With
more requests in flight than connections, every thread can end up waiting for a
connection that only a request waiting for a thread would return: nothing moves until
the pool's 30 s timeout (measured: 100 clients, one process, 40 % of requests failed).
Requests past the bound wait here, on the event loop, holding nothing.
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Receive, Scope, Send


class InFlight:
    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit
        self._slots: asyncio.Semaphore | None = None  # made on the server's loop

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Live event streams last minutes and hold no connection while they wait.
        if scope["type"] != "http" or scope["path"].endswith("/events"):
            await self.app(scope, receive, send)
            return
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.limit)
        async with self._slots:
            await self.app(scope, receive, send)
