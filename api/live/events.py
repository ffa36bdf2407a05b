"""A submission's live events (server-sent events), and how many streams may be open.

Every stream is fed by the API process's broadcaster (api.live.broadcast): a stream costs
memory, never a database connection or a poll. The caps per user and per process
bound that memory and the open sockets.

Every event has an id, "<judging id>:<seq>": seq counts the case events of the judging
sent so far (cases go out in commit order, the same on every connection), so a client
that reconnects with `Last-Event-ID` gets the status again and only the cases it missed.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.types import Receive, Scope, Send

from api.access.caller import Caller
from api.errors import NotFound
from api.live.broadcast import Broadcaster, broadcaster
from api.live.fdlimit import stream_capacity
from api.live.views import CONTESTANT, ORGANIZER, View
from api.numbers import plain_id
from api.settings import Settings

# api.routes.hot_reads sends these too
STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
RETRY_AFTER_S = 10  # a stream ends with its judging: a slot is soon free again


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
            # A stream is a socket: the process's cap fits its open-files limit.
            total = stream_capacity(settings.event_streams_per_process)
            slots = StreamSlots(settings.event_streams_per_user, total)
            request.app.state.event_streams = slots
        return slots


class EventStream(StreamingResponse):
    """Releases its slot when the response ends, however it ends (the client hanging
    up, a cancellation, an error), even if the body was never started."""

    def __init__(self, content: AsyncIterator[str], slot: Slot):
        super().__init__(content, media_type="text/event-stream", headers=STREAM_HEADERS)
        self.slot = slot

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.slot.release()


async def open_stream(request: Request, settings: Settings, sub_id: int, user: Caller) -> Any:
    """The event stream of a submission the user may see; 404 for one they may not (or
    none), 429 with Retry-After when the user or the process has its most streams open.
    async, the first view from the broadcaster: no worker-thread hop and no session of
    its own (a follow's first event waited p99 0.45 s for a thread at 300 clients)."""
    cls = ORGANIZER if user.is_admin else CONTESTANT
    hub = broadcaster(request.app)
    view, heard = await hub.first_view(sub_id, cls)
    if view is None or not (user.is_admin or view.team == user.team_id):
        raise NotFound(f"no submission {sub_id}")  # also for other teams': no probing
    slot = stream_slots(request, settings).take(user.id)
    if isinstance(slot, str):
        headers = {"Retry-After": str(RETRY_AFTER_S)}
        return JSONResponse({"detail": slot}, status_code=429, headers=headers)
    resume = last_event_id(request.headers.get("last-event-id", ""))
    every = settings.sse_keepalive_s
    return EventStream(_events(hub, sub_id, cls, resume, slot, (view, heard), every), slot)


def last_event_id(header: str) -> tuple[int, int] | None:
    """(judging id, seq) from a `Last-Event-ID` this server sent, else None."""
    ids = [plain_id(p) for p in header.strip().split(":")]
    if len(ids) != 2 or ids[0] is None or ids[1] is None:
        return None
    return ids[0], ids[1]


async def _events(
    hub: Broadcaster,
    sub_id: int,
    cls: str,
    resume: tuple[int, int] | None,
    slot: Slot,
    first: tuple[View, int],
    keepalive_s: float,
) -> AsyncIterator[str]:
    """`status` on each change, `case` per new result, `end` when done. What a
    contestant may not see yet (hidden cases while judged) is not in the view
    (api.actions.submissions), so it is not in the events either."""
    sent = dict([resume]) if resume else {}  # judging id -> the last case seq sent
    last_status = ""
    clock = asyncio.get_running_loop().time
    # A keep-alive is due a fixed time after the last frame *sent*: counted from any
    # news (a hidden case stored, which this viewer does not see) it would tell when
    # that news came, and a planner chooses when its hidden cases end.
    due = clock() + keepalive_s
    try:
        async with hub.watch(sub_id, cls, first) as viewer:
            while True:
                view = await viewer.next(max(0.0, due - clock()))
                if view is None:
                    if clock() >= due:
                        yield ": keep-alive\n\n"
                        due = clock() + keepalive_s
                    continue
                out = _frames(view, sent, last_status)
                last_status = view.status
                if out:
                    yield out
                    due = clock() + keepalive_s
                if view.final:
                    return
    finally:
        slot.release()


def _frames(view: View, sent: dict[int, int], last_status: str) -> str:
    """What a stream sends of `view`: its status if it changed, the cases after the
    last one sent (`sent` is updated), and the end if the judging is over."""
    jid, out = view.judging_id, []
    if view.status != last_status:
        out.append(_sse("status", view.status, f"{jid}:{sent.get(jid, 0)}"))
    for seq, data in view.cases:
        if seq > sent.get(jid, 0):
            sent[jid] = seq
            out.append(_sse("case", data, f"{jid}:{seq}"))
    if view.final:
        out.append(_sse("end", view.end, f"{jid}:{sent.get(jid, 0)}"))
    return "".join(out)


def whole_stream(view: View) -> str:
    """What a new stream (no Last-Event-ID) sends of a judged submission's final view
    (api.routes.hot_reads answers such a follow with it, without opening a stream)."""
    return _frames(view, {}, "")


def _sse(event: str, data: str, event_id: str) -> str:
    return f"id: {event_id}\nevent: {event}\ndata: {data}\n\n"
