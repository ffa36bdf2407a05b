"""The bytes of a recorded file, plain or compressed: TensorBoard's trace handler writes
profiler traces as `.pt.trace.json.gz`, `memorace trace` writes `.json.xz`.

Compression is told by the magic bytes, not the name. The decompressed bytes are held
to the same limit as a plain file's: a small bomb (a few KiB that inflate to GiB)
stops being read one byte past the limit, so memory stays bounded by it.
"""

from __future__ import annotations

import gzip
import io
import lzma
import zlib
from pathlib import Path

from judge.csvtable import read_bounded
from judge.errors import CaseError

MAX_INPUT_BYTES = 512 * 2**20  # a file's bytes, before and after decompression
GZIP_MAGIC = b"\x1f\x8b"
XZ_MAGIC = b"\xfd7zXZ\x00"


def read_input(path: Path, limit: int | None = None) -> bytes:
    """The bytes of `path`, decompressed if gzip or xz; at most `limit` either way
    (default MAX_INPUT_BYTES, read when called)."""
    limit = MAX_INPUT_BYTES if limit is None else limit
    return decompress_bounded(read_bounded(path, limit, CaseError), limit, path)


def decompress_bounded(data: bytes, limit: int, path: Path | str) -> bytes:
    """`data` itself, or what its gzip or xz stream holds: CaseError when the stream is
    damaged or truncated, or holds more than `limit` bytes."""
    if data[:2] == GZIP_MAGIC:
        what, stream = "gzip", gzip.GzipFile(fileobj=io.BytesIO(data), mode="rb")
    elif data[:6] == XZ_MAGIC:
        what, stream = "xz", lzma.LZMAFile(io.BytesIO(data), mode="rb")  # noqa: SIM115
    else:
        return data
    try:
        with stream:  # closed here, not where it is made
            out = _read_up_to(stream, limit + 1)
    except (OSError, EOFError, lzma.LZMAError, zlib.error) as exc:
        # gzip.BadGzipFile is an OSError; a cut-off stream ends in EOFError
        raise CaseError(f"a damaged {what} file: {exc or type(exc).__name__}", path) from None
    if len(out) > limit:
        raise CaseError(f"the {what} file decompresses to over {limit:,} bytes, the limit", path)
    return out


def _read_up_to(stream: io.BufferedIOBase, most: int) -> bytes:
    """At most `most` bytes, a MiB at a time: one read(most) would reserve `most` at
    once, and a list of parts joined would hold them twice (BytesIO's value is not
    copied)."""
    buf = io.BytesIO()
    while buf.tell() < most and (part := stream.read(min(most - buf.tell(), _CHUNK))):
        buf.write(part)
    return buf.getvalue()


_CHUNK = 2**20
