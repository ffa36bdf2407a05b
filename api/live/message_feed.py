"""Clarifications and announcements, live: each open page holds one stream
(GET /api/v1/contest/events) and hears every question, answer and announcement its
reader may read, the moment it is committed.

One read per change per API process, whatever the number of streams: a change is news
(api.news's "m" word, by Redis or by the news table), which wakes this process's feed;
the feed reads the messages that changed since its last read and hands each open stream
those its reader may read (api.actions.messages.may_read). Without news it polls a fingerprint
of the messages every poll interval, so a lost message costs a delay, never an event.

A stream's events carry ids "<feed>:<mark>" (this process's feed and a random mark of
a position in its changes, so that the ids a team sees do not count the changes it may
not read: other teams' questions, other contests' messages): a client that reconnects
to the same process with Last-Event-ID gets what it missed from the feed's recent
history; elsewhere, or from a mark too old, it starts from now (the page's list is the
record; the stream only says what is new).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio
from fastapi import Request
from fastapi.responses import JSONResponse
from sqlalchemy import func, select

from api.access.caller import Caller
from api.actions import contests
from api.actions.messages import may_read, message_dict
from api.db.models import Message
from api.db.session import session_scope
from api.live.broadcast import broadcaster
from api.live.events import RETRY_AFTER_S, EventStream, stream_slots
from api.settings import Settings

log = logging.getLogger("memorace.messages")
HISTORY = 500  # changes kept for streams that reconnect (Last-Event-ID)
MARKS = 4 * HISTORY  # positions whose random marks are remembered
SAFETY_POLL_S = 3.0  # the fingerprint poll's interval while news comes
STREAM_S = 300.0  # a stream's life: then the client reconnects and is checked again
RECONNECT_MS = 1000  # when a browser reconnects after the end (the SSE `retry` field)


@dataclass(frozen=True)
class Change:
    """A message as it became (new, answered, corrected), for each kind of reader."""

    seq: int
    message_id: int
    contest_id: int
    team_id: int | None
    audience: str
    organizer: str  # the event's data for organizers (JSON)
    contestant: str  # for a team allowed to read it


@dataclass(eq=False)  # kept in a set, by identity
class Listener:
    """One open stream's mailbox."""

    organizer: bool
    team_id: int | None
    contests: frozenset[int] | None = None  # the contests it hears (None: every one)
    # Bounded: a client that never reads keeps the newest HISTORY, not every change.
    pending: deque[Change] = field(default_factory=lambda: deque(maxlen=HISTORY))
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    def offer(self, change: Change) -> None:
        if self.contests is not None and change.contest_id not in self.contests:
            return
        if may_read(self.organizer, self.team_id, change.team_id, change.audience):
            self.pending.append(change)
            self.ready.set()


Found = tuple[tuple, int, int | None, str, str, str]  # order, contest, team, audience, datas


def read_changes(url: str, known: dict[int, Any] | None) -> tuple[dict[int, Any], list[Found]]:
    """Every message's answer stamp now, and the messages that are new or changed
    against `known` (id -> answer stamp; None: none, the first read), with their data for
    organizers and teams, in the order they changed."""
    found: list[Found] = []
    with session_scope(url) as db:
        marks = dict(db.execute(select(Message.id, Message.answered_at)).all())
        if known is None:
            return marks, found
        ids = sorted(i for i, at in marks.items() if i not in known or known[i] != at)
        for start in range(0, len(ids), 500):
            for row in db.scalars(select(Message).where(Message.id.in_(ids[start : start + 500]))):
                order = (row.answered_at or row.created_at, row.id)
                datas = [json.dumps(message_dict(row, organizer=o)) for o in (True, False)]
                found.append((order, row.contest_id, row.team_id, row.audience, *datas))
                # The stamp of what is sent: one committed between the two reads is
                # news next time, not a second copy of this one.
                marks[row.id] = row.answered_at
    return marks, sorted(found, key=lambda f: f[0])


def fingerprint(url: str) -> tuple:
    """What changes whenever a message is added or answered."""
    with session_scope(url) as db:
        query = select(func.count(Message.id), func.max(Message.id), func.max(Message.answered_at))
        return tuple(db.execute(query).one())


class MessageFeed:
    def __init__(self, settings: Settings):
        self.url, self.poll_s = settings.database_url, settings.event_poll_s
        self.name = secrets.token_hex(4)
        self.listeners: set[Listener] = set()
        self.history: deque[Change] = deque(maxlen=HISTORY)
        self.known: dict[int, Any] | None = None  # None: not read yet
        self.mark: tuple | None = None
        self.seq = 0
        self.marks: OrderedDict[int, str] = OrderedDict()  # position -> its random mark
        self.positions: dict[str, int] = {}  # and back
        self.source: Any = None  # the broadcaster: while its news comes, poll slowly
        self.wake: asyncio.Event | None = None
        self.task: asyncio.Task[None] | None = None
        self.reads = 0

    def start(self) -> None:
        if self.task is None:
            self.wake = asyncio.Event()
            self.wake.set()  # the first read at once: what comes after it is news
            self.task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(BaseException):
                await self.task
            self.task = None

    def news(self) -> None:
        """A question, answer or announcement was committed somewhere."""
        if self.wake is not None:
            self.wake.set()

    async def _run(self) -> None:
        assert self.wake is not None
        while True:
            woken = False
            with contextlib.suppress(TimeoutError):
                news_up = self.source is not None and self.source.news_up
                interval = SAFETY_POLL_S if news_up or not self.listeners else self.poll_s
                await asyncio.wait_for(self.wake.wait(), interval)
                woken = True
            self.wake.clear()
            try:
                await self._step(woken)
            except Exception as exc:  # the database hiccuped: the next poll tries again
                log.warning("cannot read the clarifications: %s", exc)

    async def _step(self, woken: bool) -> None:
        mark = await anyio.to_thread.run_sync(fingerprint, self.url)
        if not woken and self.known is not None and mark == self.mark:
            return
        marks, found = await anyio.to_thread.run_sync(read_changes, self.url, self.known)
        self.reads += 1
        self.known, self.mark = marks, mark
        for (_, message_id), contest_id, team_id, audience, organizer, contestant in found:
            self.seq += 1
            change = Change(
                self.seq, message_id, contest_id, team_id, audience, organizer, contestant
            )
            self.history.append(change)
            for listener in list(self.listeners):
                listener.offer(change)

    @contextlib.asynccontextmanager
    async def listen(self, listener: Listener, after: int) -> AsyncIterator[Listener]:
        """Adds `listener`, first offered what came after `after` (a seq of this feed):
        of each message only its latest change, as it is now (an answer to all that the
        jury corrected to the asking team alone is not replayed to the other teams)."""
        self.start()
        latest = {change.message_id: change.seq for change in self.history}
        for change in self.history:
            if change.seq > after and latest[change.message_id] == change.seq:
                listener.offer(change)
        self.listeners.add(listener)
        try:
            yield listener
        finally:
            self.listeners.discard(listener)

    @property
    def mark_now(self) -> str:
        """A stream's start (Last-Event-ID, or ?after= for a page rendered now)."""
        return self.event_id(self.seq)

    def event_id(self, seq: int) -> str:
        """`seq`'s id: its random mark, the same for every stream."""
        mark = self.marks.get(seq)
        if mark is None:
            mark = self.marks[seq] = secrets.token_urlsafe(9)
            self.positions[mark] = seq
            while len(self.marks) > MARKS:
                _, old = self.marks.popitem(last=False)
                self.positions.pop(old, None)
        return f"{self.name}:{mark}"

    def resume_from(self, header: str) -> int | None:
        """The position an id of this feed marks; None: another feed's, or forgotten."""
        name, _, mark = header.strip().partition(":")
        return self.positions.get(mark) if name == self.name else None


def feed(app: Any) -> MessageFeed:
    """The app's feed (one per API process)."""
    found: MessageFeed | None = getattr(app.state, "message_feed", None)
    if found is None:
        found = app.state.message_feed = MessageFeed(app.state.settings)
        found.source = broadcaster(app)
        found.source.on_messages = found.news
        found.source.start()  # the news' listener
    return found


async def open_stream(request: Request, settings: Settings, user: Caller) -> Any:
    """The live messages of `user`'s contests; 429 with Retry-After past the caps."""
    hub = feed(request.app)
    slot = stream_slots(request, settings).take(user.id)
    if isinstance(slot, str):
        headers = {"Retry-After": str(RETRY_AFTER_S)}
        return JSONResponse({"detail": slot}, status_code=429, headers=headers)
    heard = None if user.is_admin else await anyio.to_thread.run_sync(_heard, settings, user)
    listener = Listener(organizer=user.is_admin, team_id=user.team_id, contests=heard)
    # EventSource sends Last-Event-ID on a reconnect; a page gives where it was rendered.
    last = request.headers.get("last-event-id") or request.query_params.get("after", "")
    after = hub.resume_from(last)
    body = _events(hub, listener, after, settings.sse_keepalive_s, STREAM_S)
    return EventStream(body, slot)


def _heard(settings: Settings, user: Caller) -> frozenset[int]:
    """The contests a contestant's stream hears: its team's (api.actions.contests.resolve's
    default for an account without a team: the current one)."""
    with session_scope(settings.database_url) as db:
        if user.team_id is None:
            return frozenset({contests.current(db).id})
        return frozenset(contests.registered(db, user.team_id))


async def _events(
    hub: MessageFeed, listener: Listener, after: int | None, keepalive_s: float, life_s: float
) -> AsyncIterator[str]:
    """`ready` at once, then `message` per change the reader may read; a keep-alive
    comment when quiet. The stream ends after `life_s`: the client reconnects (with
    Last-Event-ID), so who may read what is checked again (a lock, a team change)."""
    start = hub.seq if after is None else after
    clock = asyncio.get_running_loop().time
    end = clock() + life_s
    async with hub.listen(listener, start):
        yield f"retry: {RECONNECT_MS}\nid: {hub.event_id(start)}\nevent: ready\ndata: {{}}\n\n"
        while clock() < end:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(listener.ready.wait(), min(keepalive_s, end - clock()))
            listener.ready.clear()
            if not listener.pending:
                yield ": keep-alive\n\n"
                continue
            out = []
            while listener.pending:
                change = listener.pending.popleft()
                data = change.organizer if listener.organizer else change.contestant
                out.append(f"id: {hub.event_id(change.seq)}\nevent: message\ndata: {data}\n\n")
            yield "".join(out)
