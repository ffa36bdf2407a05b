"""Server-sent events (text/event-stream), parsed as the WHATWG rules say."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class SSEEvent:
    event: str
    data: str
    id: str | None = None


def parse_sse(chunks: Iterable[bytes]) -> Iterator[SSEEvent]:
    """Events of a text/event-stream, per the WHATWG rules.

    Chunks may split lines (even a CRLF pair) anywhere. A block without any
    `data:` line is not dispatched, and an unterminated block at the end of the
    stream is discarded: both as the spec says, so a cut stream never yields a
    half event.
    """
    event, data, last_id = "", [], None
    for line in _lines(chunks):
        if not line:
            if data:
                yield SSEEvent(event or "message", "\n".join(data), last_id)
            event, data = "", []
            continue
        if line.startswith(":"):
            continue  # comment: keep-alive
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
        elif name == "id" and "\0" not in value:
            last_id = value
        # "retry" and unknown fields: ignored, we do not reconnect by stream.


def _lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """Decoded lines ending in CRLF, LF or CR, across chunk boundaries."""
    bom = b"\xef\xbb\xbf"
    buf, first, pending_cr = b"", True, False
    for chunk in chunks:
        if not chunk:
            continue
        if pending_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]  # second half of a CRLF that the previous chunk cut
        pending_cr = False
        buf += chunk
        if first:
            if len(buf) < len(bom) and bom.startswith(buf):
                continue  # maybe a BOM cut in two: wait for the rest
            buf, first = buf.removeprefix(bom), False
        while True:
            cut = _line_end(buf)
            if cut is None:
                break
            end, nxt = cut
            if nxt == len(buf) and buf.endswith(b"\r"):
                pending_cr = True  # a lone CR at the end may be a CRLF split in two
            yield buf[:end].decode("utf-8", errors="replace")
            buf = buf[nxt:]


def _line_end(buf: bytes) -> tuple[int, int] | None:
    """(end of the line, start of the next) for the first line in buf, or None."""
    cr, lf = buf.find(b"\r"), buf.find(b"\n")
    if cr == -1 and lf == -1:
        return None
    if cr == -1 or (lf != -1 and lf < cr):
        return lf, lf + 1
    return cr, cr + 2 if buf[cr + 1 : cr + 2] == b"\n" else cr + 1
