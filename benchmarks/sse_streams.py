"""A cheap client for thousands of live event streams in one process: raw asyncio
sockets and a minimal HTTP/1.1 + server-sent events reader (httpx costs several times
the CPU per event, and the load generator shares the machine with the service).

Each stream notes when each case event first arrived (the wall clock, as the worker's
commit stamps are) and how many came twice.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from urllib.parse import urlsplit

READ_TIMEOUT_S = 60.0  # the server sends a keep-alive every 15 s
OPEN_TIMEOUT_S = 120.0  # a connection and the response's headers


@dataclass
class Stream:
    sub_id: int
    token: str
    reads: bool = True  # False: a stuck client that never reads after the headers
    opened: float = 0.0  # when its headers came (0: never)
    closed: float = 0.0  # when it ended or failed
    error: str = ""
    cases: dict[str, float] = field(default_factory=dict)  # case -> first arrival
    duplicates: int = 0
    statuses: int = 0
    ended: bool = False
    path: str = ""  # another stream than the submission's (its `message` events noted)


async def follow(base_url: str, stream: Stream, opening: asyncio.Semaphore) -> None:
    """Open the stream (at most `opening` at once) and read it to its `end` event."""
    writer: asyncio.StreamWriter | None = None
    try:
        async with opening:
            reader, writer, chunked = await asyncio.wait_for(
                _open(base_url, stream), OPEN_TIMEOUT_S
            )
        stream.opened = time.time()
        if not stream.reads:
            await asyncio.Event().wait()  # until cancelled: never reads a byte
        async for name, data, arrived in _events(reader, chunked):
            _note(stream, name, data, arrived)
            if name == "end":
                stream.ended = True
                return
        stream.error = stream.error or "the stream closed before its end event"
    except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError) as exc:
        stream.error = f"{type(exc).__name__}: {exc}"
    finally:
        stream.closed = time.time()
        if writer is not None:
            writer.close()


async def _open(
    base_url: str, stream: Stream
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bool]:
    url = urlsplit(base_url)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    if not stream.reads:  # a small window, so that the server's buffers fill soonest
        writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    path = stream.path or f"/api/v1/submissions/{stream.sub_id}/events"
    writer.write(
        f"GET {path} HTTP/1.1\r\nHost: {url.netloc}\r\nAuthorization: Bearer {stream.token}\r\n"
        "Accept: text/event-stream\r\n\r\n".encode()
    )
    status = await asyncio.wait_for(reader.readline(), READ_TIMEOUT_S)
    headers = {}
    while (line := await asyncio.wait_for(reader.readline(), READ_TIMEOUT_S)) not in (b"\r\n", b""):
        key, _, value = line.decode("latin-1").partition(":")
        headers[key.strip().lower()] = value.strip().lower()
    if status.split()[1:2] != [b"200"]:
        writer.close()
        raise ValueError(f"HTTP {status.decode('latin-1').strip()}")
    return reader, writer, headers.get("transfer-encoding") == "chunked"


async def _body(reader: asyncio.StreamReader, chunked: bool) -> AsyncIterator[bytes]:
    while True:
        if not chunked:
            data = await asyncio.wait_for(reader.read(65536), READ_TIMEOUT_S)
            if not data:
                return
            yield data
            continue
        size = int((await asyncio.wait_for(reader.readline(), READ_TIMEOUT_S)).split(b";")[0], 16)
        if size == 0:
            return
        yield (await reader.readexactly(size + 2))[:-2]


async def _events(
    reader: asyncio.StreamReader, chunked: bool
) -> AsyncIterator[tuple[str, str, float]]:
    """(event name, data, arrival time) per event; comments (keep-alives) skipped."""
    pending = b""
    async for data in _body(reader, chunked):
        arrived = time.time()
        *blocks, pending = (pending + data).split(b"\n\n")
        for block in blocks:
            name = text = ""
            for line in block.decode().split("\n"):
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    text = line[6:]
            if name:
                yield name, text, arrived


def _note(stream: Stream, name: str, data: str, arrived: float) -> None:
    if name == "message":  # api.live.message_feed's: noted as "m<id>"
        key = f"m{json.loads(data)['id']}"
        stream.duplicates += key in stream.cases
        stream.cases.setdefault(key, arrived)
    elif name == "status":
        stream.statuses += 1
    elif name == "case":
        try:
            case = str(json.loads(data)["case"])
        except (ValueError, TypeError, KeyError, IndexError):
            stream.error = f"a case event without a case: {data[:200]!r}"
            return
        if case in stream.cases:
            stream.duplicates += 1
        else:
            stream.cases[case] = arrived
