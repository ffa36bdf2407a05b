"""One broadcaster per API process: every live event stream of the process is fed from
it, so a stream costs memory, never a database connection or a poll of its own.

News that a submission changed comes from Redis pub/sub when Redis is the broker (the
workers publish it, api.news), from the news table on the embedded backend (read a few
times a second), and from one shared poll of the database otherwise: one query per
interval for all the watched submissions at once. While the news comes the poll still
runs, slowly, to catch what pub/sub lost (a message sent while this process was
reconnecting); while it does not, the poll runs at full speed.

On news, the submission is read once per visibility class (organizers see every case;
contestants see what api.actions.submissions lets them, the same for every contestant), and
that view, with its events already serialized (api.live.views), is offered to every
viewer of the class. A viewer keeps only the newest view: it says everything the older ones said,
so a slow client never makes memory grow.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio

from api import news
from api.live.views import View, final_key, fingerprints, keep_final, read_views
from api.reads import readcache
from api.settings import Settings

log = logging.getLogger("memorace.broadcast")
SAFETY_POLL_S = 3.0  # the poll's interval while Redis delivers the news
READERS = 4  # reads of news of a submission itself, at once (each holds a connection)
# Reads for queue positions alone and the safety poll, on threads of their own: when a
# judging ends, every queued channel is re-read, and neither the news of the submission
# that ended nor a new stream's first view may wait behind them.
QUEUE_READERS = 2
REDIS_RETRY_S = 1.0
TABLE_READ_S = 0.1  # the news table's reads (embedded backend): an indexed range, ~0.1 ms
PRUNE_EVERY = 600  # table reads between two prunings of old rows


class Viewer:
    """One stream's mailbox: the newest view of its class."""

    def __init__(self, cls: str):
        self.cls = cls
        self.latest: View | None = None
        self.ready = asyncio.Event()

    def offer(self, view: View) -> None:
        self.latest = view
        self.ready.set()

    async def next(self, timeout: float) -> View | None:
        """The newest view not yet taken, or None after `timeout` seconds without one."""
        try:
            await asyncio.wait_for(self.ready.wait(), timeout)
        except TimeoutError:
            return None
        self.ready.clear()
        view, self.latest = self.latest, None
        return view


class Channel:
    """The viewers of one submission and its newest views."""

    def __init__(self, sub_id: int):
        self.sub_id = sub_id
        self.viewers: set[Viewer] = set()
        self.views: dict[str, View] = {}
        self.dirty = False
        self.urgent = False  # news of this submission itself, not of the queue
        self.task: asyncio.Task[None] | None = None

    @property
    def queued(self) -> bool:
        return any(v.queued for v in self.views.values())


class Broadcaster:
    def __init__(self, settings: Settings):
        self.url, self.broker = settings.database_url, settings.broker_url
        self.poll_s = settings.event_poll_s
        self.channels: dict[int, Channel] = {}
        self.news_up = False
        self.tasks: list[asyncio.Task[None]] = []
        self.limiter: anyio.CapacityLimiter | None = None
        self.background: anyio.CapacityLimiter | None = None  # queue reads, the poll
        self.wake: asyncio.Event | None = None  # ends the poll's sleep (Redis lost)
        self.seen: dict[int, tuple] = {}
        self.seen_global: tuple | None = None
        self.reads = 0  # submission reads so far (for tests and metrics)
        self.heard = 0  # news heard so far (first_view)
        self.table_read = 0  # the last news row read (the embedded backend's news)
        self.polls = 0
        self.on_messages: Any = None  # api.live.message_feed's, told of news of the messages

    @property
    def hears_news(self) -> bool:
        """Whether news can come: by Redis, or by the news table (SQLite)."""
        return news.uses_redis(self.broker) or news.through_table(self.broker, self.url)

    def start(self) -> None:
        """Started on the event loop (the streams'): by the lifespan when news can come,
        else by the first stream."""
        if self.tasks:
            return
        self.limiter = anyio.CapacityLimiter(READERS)
        self.background = anyio.CapacityLimiter(QUEUE_READERS)
        self.wake = asyncio.Event()
        self.tasks.append(asyncio.create_task(self._poll()))
        if news.uses_redis(self.broker):
            self.tasks.append(asyncio.create_task(self._listen()))
        elif self.hears_news:  # the news table
            self.tasks.append(asyncio.create_task(self._tail()))

    async def stop(self) -> None:
        tasks = self.tasks + [c.task for c in self.channels.values() if c.task]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        self.tasks = []

    def current(self, sub_id: int, cls: str) -> View | None:
        """The submission's view as news keeps it current: its channel's, or the kept
        final one (news clears it)."""
        channel = self.channels.get(sub_id)
        found = channel.views.get(cls) if channel is not None else None
        return found or readcache.get(final_key(self.url, sub_id, cls))

    async def first_view(self, sub_id: int, cls: str) -> tuple[View | None, int]:
        """The view a new stream starts from (None: no such submission), read now when
        none is current, and the count of news heard before it: a stream that opens
        later reads again if more came (watch), as the view may have missed it."""
        heard = self.heard
        found = self.current(sub_id, cls)
        if found is not None:
            return found, heard
        self.start()
        assert self.limiter is not None
        views = await self._fetch(sub_id, {cls}, self.limiter)
        return views.get(cls), heard

    async def _fetch(
        self, sub_id: int, classes: set[str], limiter: anyio.CapacityLimiter
    ) -> dict[str, View]:
        """read_views on one of `limiter`'s threads; a judged submission's view is kept."""
        gen = readcache.generation()
        views = await anyio.to_thread.run_sync(
            read_views, self.url, sub_id, classes, limiter=limiter
        )
        self.reads += 1
        keep_final(self.url, sub_id, views, gen)
        return views

    @contextlib.asynccontextmanager
    async def watch(
        self, sub_id: int, cls: str, first: tuple[View, int] | None = None
    ) -> AsyncIterator[Viewer]:
        """`first`: first_view's answer, offered at once (read again if news came since)."""
        self.start()
        channel = self.channels.get(sub_id)
        if channel is None:
            channel = self.channels[sub_id] = Channel(sub_id)
        viewer = Viewer(cls)
        channel.viewers.add(viewer)
        kept = self.current(sub_id, cls)
        if kept is None and first is not None:
            kept = first[0]
            if first[1] != self.heard:  # news since its read, maybe of this submission
                self.news(sub_id)
        if kept is not None:
            viewer.offer(kept)  # current: news keeps it so (or clears the kept final one)
        else:
            self.news(sub_id)
        try:
            yield viewer
        finally:
            channel.viewers.discard(viewer)
            if not channel.viewers and self.channels.get(sub_id) is channel:
                del self.channels[sub_id]
                self.seen.pop(sub_id, None)

    def news(self, sub_id: int, queue: bool = False) -> None:
        """Submission `sub_id` changed (and, with `queue`, so did the queue)."""
        self.heard += 1
        channel = self.channels.get(sub_id)
        if channel is not None:
            self._refresh(channel)
        if queue:  # queue positions moved
            for other in list(self.channels.values()):
                if other.queued:
                    self._refresh(other, urgent=False)

    def _refresh(self, channel: Channel, urgent: bool = True) -> None:
        channel.dirty = True
        channel.urgent = channel.urgent or urgent
        if channel.task is None or channel.task.done():
            channel.task = asyncio.create_task(self._read(channel))

    async def _read(self, channel: Channel) -> None:
        """Reads until no news came during the read: news during a read is coalesced."""
        assert self.limiter is not None and self.background is not None
        while channel.dirty and channel.viewers:
            channel.dirty = False
            urgent, channel.urgent = channel.urgent, False
            classes = {v.cls for v in channel.viewers}
            try:
                limiter = self.limiter if urgent else self.background
                views = await self._fetch(channel.sub_id, classes, limiter)
            except Exception as exc:  # the database hiccuped: try again shortly
                log.warning("cannot read submission %s: %s", channel.sub_id, exc)
                channel.dirty, channel.urgent = True, channel.urgent or urgent
                await asyncio.sleep(1.0)
                continue
            channel.views = views
            for viewer in list(channel.viewers):
                if viewer.cls in views:
                    viewer.offer(views[viewer.cls])

    async def _poll(self) -> None:
        assert self.background is not None and self.wake is not None
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self.wake.wait(), SAFETY_POLL_S if self.news_up else self.poll_s
                )
            self.wake.clear()
            ids = sorted(self.channels)
            if not ids:
                continue
            try:
                found, overall = await anyio.to_thread.run_sync(
                    fingerprints, self.url, ids, limiter=self.background
                )
            except Exception as exc:
                log.warning("cannot poll the watched submissions: %s", exc)
                continue
            self.polls += 1
            self._compare(found, overall)

    def _compare(self, found: dict[int, tuple], overall: tuple) -> None:
        queue, contest = overall
        if self.seen_global is not None:
            old_queue, old_contest = self.seen_global
            for channel in list(self.channels.values()):
                if old_contest != contest or (old_queue != queue and channel.queued):
                    self._refresh(channel, urgent=old_contest != contest)
        self.seen_global = overall
        for sub_id, mark in found.items():
            if self.seen.get(sub_id) != mark and sub_id in self.channels:
                # Also a first sight: the channel's first read may have come just before.
                self._refresh(self.channels[sub_id])
            self.seen[sub_id] = mark

    async def _listen(self) -> None:
        """Redis pub/sub, reconnecting for as long as the process runs."""
        import redis.asyncio as aioredis

        name = news.channel(self.broker)
        while True:
            client = aioredis.from_url(
                self.broker, socket_connect_timeout=2, health_check_interval=10
            )
            try:
                async with client.pubsub(ignore_subscribe_messages=True) as pubsub:
                    await pubsub.subscribe(name)
                    self._heard(True)  # clears what was published while away
                    log.info("live events: news from Redis channel %s", name)
                    async for message in pubsub.listen():
                        parsed = news.parse(message.get("data", b""))
                        if message.get("type") == "message" and parsed:
                            self._hear(parsed)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self.news_up:
                    log.warning("live events: Redis lost (%s); polling the database", exc)
            finally:
                self._heard(False)  # kept answers live STALENESS_S again; fast polls
                with contextlib.suppress(Exception):
                    await client.aclose()
            await asyncio.sleep(REDIS_RETRY_S)

    async def _tail(self) -> None:
        """The news table (the embedded backend's pub/sub), read for as long as the
        process runs; a failed read counts as Redis lost does."""
        after, reads = None, 0
        while True:
            try:
                if after is None:
                    after = await anyio.to_thread.run_sync(news.last_row, self.url)
                    self._heard(True)
                after, items = await anyio.to_thread.run_sync(news.tail, self.url, after)
                self.table_read = after
                for item in items:
                    self._hear(item)
                reads += 1
                if reads % PRUNE_EVERY == 0:
                    await anyio.to_thread.run_sync(news.prune, self.url)
            except asyncio.CancelledError:
                self._heard(False)
                raise
            except Exception as exc:
                log.warning("live events: cannot read the news table (%s); polling", exc)
                self._heard(False)
                after = None
            await asyncio.sleep(TABLE_READ_S)

    def _hear(self, item: news.News) -> None:
        readcache.hear(item)  # what it changed, or everything
        if item.messages and self.on_messages is not None:
            self.on_messages()
        else:
            self.news(item.sub_id, item.queue)

    def _heard(self, live: bool) -> None:
        """News comes (True) or stopped coming (False): what was kept may have missed
        some; the watched submissions are read again, the poll goes fast without it."""
        if live == self.news_up:
            return
        self.news_up = live
        readcache.hears_news(live)
        if live:
            for channel in list(self.channels.values()):
                self._refresh(channel)
            if self.on_messages is not None:
                self.on_messages()
        elif self.wake is not None:
            self.wake.set()


def broadcaster(app: Any) -> Broadcaster:
    """The app's broadcaster (one per API process), made with the app."""
    found: Broadcaster | None = getattr(app.state, "broadcaster", None)
    if found is None:
        found = app.state.broadcaster = Broadcaster(app.state.settings)
    return found
