"""A submission's live events (server-sent events), and how many streams may be open.

Each open stream polls the database (from the thread pool) twice a second, so their
number is capped per user and per API process: without a cap one contestant with
400 streams starved every other request of database connections. (A stopgap until
one broadcaster serves every stream.)
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from typing import Any

from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.types import Receive, Scope, Send

from api import submissions
from api.db.models import User
from api.db.session import session_scope
from api.settings import Settings

SSE_POLL_S = 0.5
SSE_KEEPALIVE_S = 15.0
RETRY_AFTER_S = 10  # a stream ends with its judging: a slot is soon free again
STATUS_KEYS = ("status", "status_detail", "queue_position", "cases_done", "cases_total")


class Slot:
    """One open stream; release() is idempotent (the stream and the response both call it)."""

    def __init__(self, slots: StreamSlots, user_id: int):
        self.slots, self.user_id, self.held = slots, user_id, True

    def release(self) -> None:
        self.slots.release(self)


class StreamSlots:
    """The open streams of this API process, per user and in all. Taken in a route's
    thread, released on the event loop: a lock guards the counts."""

    def __init__(self, per_user: int, total: int):
        self.per_user, self.total = per_user, total
        self.lock = threading.Lock()
        self.by_user: dict[int, int] = {}
        self.open = 0

    def take(self, user_id: int) -> Slot | str:
        """A slot, or why there is none."""
        with self.lock:
            mine = self.by_user.get(user_id, 0)
            if mine >= self.per_user:
                return (
                    f"you have {mine} live event streams open, the most one account may "
                    "hold: close one (a submission page, or a client following a "
                    "submission), or poll GET /api/v1/submissions/ID instead"
                )
            if self.open >= self.total:
                return (
                    f"the server is serving {self.open} live event streams, its most: "
                    "poll GET /api/v1/submissions/ID instead, or try again later"
                )
            self.by_user[user_id] = mine + 1
            self.open += 1
            return Slot(self, user_id)

    def release(self, slot: Slot) -> None:
        with self.lock:
            if not slot.held:
                return
            slot.held = False
            self.open -= 1
            left = self.by_user[slot.user_id] - 1
            if left:
                self.by_user[slot.user_id] = left
            else:
                del self.by_user[slot.user_id]


_slots_lock = threading.Lock()


def stream_slots(request: Request, settings: Settings) -> StreamSlots:
    """The app's slots (one set per API process), made on first use."""
    with _slots_lock:
        slots = getattr(request.app.state, "event_streams", None)
        if slots is None:
            slots = StreamSlots(settings.event_streams_per_user, settings.event_streams_per_process)
            request.app.state.event_streams = slots
        return slots


class EventStream(StreamingResponse):
    """Releases its slot when the response ends, however it ends (the client hanging
    up, a cancellation, an error), even if the body was never started."""

    def __init__(self, content: AsyncIterator[str], slot: Slot):
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        super().__init__(content, media_type="text/event-stream", headers=headers)
        self.slot = slot

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.slot.release()


def open_stream(request: Request, settings: Settings, sub_id: int, user: User) -> Any:
    """The event stream of a submission the user may see (checked by the caller), or
    429 with Retry-After when the user or the process has its most streams open."""
    slot = stream_slots(request, settings).take(user.id)
    if isinstance(slot, str):
        headers = {"Retry-After": str(RETRY_AFTER_S)}
        return JSONResponse({"detail": slot}, status_code=429, headers=headers)
    return EventStream(_events(settings, sub_id, user.id, request, slot), slot)


async def _events(
    settings: Settings, sub_id: int, user_id: int, request: Request, slot: Slot
) -> AsyncIterator[str]:
    """Server-sent events from the database (the source of truth), so they work the same
    with any broker: `status` on each change, `case` per new result, `end` when done.
    What a contestant may not see yet (hidden cases while judged) is not in the
    snapshot (api.submissions), so it is not in the events either."""
    sent_cases: set[tuple[int | None, str]] = set()
    last_status: Any = None
    quiet = 0.0
    try:
        while not await request.is_disconnected():
            # A session (and its pooled connection) per poll, closed before the sleep.
            body = await run_in_threadpool(_snapshot, settings, sub_id, user_id)
            out = []
            status = {k: body[k] for k in STATUS_KEYS}
            if status != last_status:
                out.append(_sse("status", status))
                last_status = status
            progress = {"cases_done": body["cases_done"], "cases_total": body["cases_total"]}
            for result in body["results"]:
                key = (body["judging_id"], result["case"])
                if key not in sent_cases:
                    sent_cases.add(key)
                    out.append(_sse("case", {**result, **progress}))
            if body["status"] in ("done", "error"):
                out.append(_sse("end", body))
                yield "".join(out)
                return
            if out:
                quiet = 0.0
                yield "".join(out)
            elif quiet >= SSE_KEEPALIVE_S:
                quiet = 0.0
                yield ": keep-alive\n\n"
            await asyncio.sleep(SSE_POLL_S)
            quiet += SSE_POLL_S
    finally:
        slot.release()


def _snapshot(settings: Settings, sub_id: int, user_id: int) -> dict[str, Any]:
    with session_scope(settings.database_url) as db:
        user = db.get(User, user_id)
        assert user is not None
        return submissions.submission_dict(db, submissions.get_submission(db, sub_id, user), user)


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"
