"""Reading an uploaded form (submissions, problem packages) without trusting it.

The routes that take a file read their body themselves, through `read_upload`,
after their dependencies have said who is asking: a request without a valid token
or session is refused before a byte of its body is read. The declared
Content-Length is checked against the limit before reading, and the body is read
with a hard cap (a chunked body has no length), so nothing of a request that will
be refused is ever stored. The file goes to memory (a submission, at most the
upload limit) or to a file in a folder of the data directory (a package); never to
the system's temporary folder.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import Request

from api.errors import ServiceError

# Room for the multipart headers and the small fields around the file.
OVERHEAD_BYTES = 64 * 1024
FIELD_LIMIT_BYTES = 4096
MAX_FIELDS = 16


def human(size: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size} bytes"


def too_large(limit: int, what: str = "the upload") -> ServiceError:
    size = human(limit) if limit < 1024 else f"{human(limit)} ({limit} bytes)"
    return ServiceError(f"{what} is more than {size}, the most that is allowed", 413)


def form_schema(file_description: str, text_fields: dict[str, str]) -> dict[str, Any]:
    """OpenAPI's description of an upload form, for a route that reads its own body."""
    properties: dict[str, Any] = {name: {"type": "string", "description": about}
                                  for name, about in text_fields.items()}  # fmt: skip
    properties["file"] = {"type": "string", "format": "binary", "description": file_description}
    schema = {"type": "object", "required": [*text_fields, "file"], "properties": properties}
    content = {"multipart/form-data": {"schema": schema}}
    return {"requestBody": {"required": True, "content": content}}


@dataclass
class Upload:
    """The form's text fields and its one file (in `data`, or at `path` on disk)."""

    fields: dict[str, str] = field(default_factory=dict)
    filename: str = ""
    size: int = 0
    sha256: str = ""
    data: bytes = b""
    path: Path | None = None


async def read_upload(
    request: Request, limit: int, what: str = "the upload", dest: Path | None = None
) -> Upload:
    """The multipart form of `request`, its file at most `limit` bytes; into memory,
    or into the folder `dest` (made here, owner-only) when given."""
    length = request.headers.get("content-length")
    if length is not None:
        if not length.strip().isdigit():
            raise ServiceError("the Content-Length header is not a number")
        if int(length) > limit + OVERHEAD_BYTES:
            raise too_large(limit, what)
    kind, params = parse_options_header(request.headers.get("content-type", ""))
    if kind != b"multipart/form-data" or not params.get(b"boundary"):
        raise ServiceError(
            "send a multipart form with the file in the field 'file' "
            "(curl -F file=@PATH ...; a browser form with enctype=multipart/form-data)",
            422,
        )
    form = _Form(limit, what, dest)
    parser = MultipartParser(params[b"boundary"], form.callbacks())
    received = 0
    try:
        async for chunk in request.stream():
            received += len(chunk)
            if received > limit + OVERHEAD_BYTES:
                raise too_large(limit, what)
            parser.write(chunk)
        parser.finalize()
        return form.result()
    except ServiceError:
        form.discard()
        raise
    except Exception as exc:  # a malformed body: python_multipart's own errors
        form.discard()
        raise ServiceError(f"the multipart form is malformed: {exc}") from None
    finally:
        form.close()


class _Form:
    """python_multipart's callbacks: text fields (small) and exactly one file."""

    def __init__(self, limit: int, what: str, dest: Path | None):
        self.limit, self.what, self.dest = limit, what, dest
        self.upload = Upload()
        self.digest = hashlib.sha256()
        self.memory = bytearray()
        self.sink: IO[bytes] | None = None
        self.headers: dict[bytes, bytes] = {}
        self.header_field = bytearray()
        self.header_value = bytearray()
        self.part_name = ""
        self.part_is_file = False
        self.file_parts = 0
        self.value = bytearray()

    def callbacks(self) -> Any:
        return {
            "on_part_begin": self._part_begin,
            "on_header_field": lambda d, s, e: self.header_field.extend(d[s:e]),
            "on_header_value": lambda d, s, e: self.header_value.extend(d[s:e]),
            "on_header_end": self._header_end,
            "on_headers_finished": self._headers_finished,
            "on_part_data": self._part_data,
            "on_part_end": self._part_end,
        }

    def _part_begin(self) -> None:
        self.headers, self.value = {}, bytearray()

    def _header_end(self) -> None:
        self.headers[bytes(self.header_field).lower()] = bytes(self.header_value)
        self.header_field, self.header_value = bytearray(), bytearray()

    def _headers_finished(self) -> None:
        _, options = parse_options_header(self.headers.get(b"content-disposition", b""))
        self.part_name = options.get(b"name", b"").decode("utf-8", "replace")
        self.part_is_file = b"filename" in options
        if not self.part_is_file:
            if len(self.upload.fields) >= MAX_FIELDS:
                raise ServiceError(f"the form has more than {MAX_FIELDS} fields")
            return
        self.file_parts += 1
        if self.file_parts > 1:
            raise ServiceError(
                "send one file per request: this form holds more than one "
                "(only the field 'file' with a single file is read)",
                422,
            )
        if self.part_name != "file":
            raise ServiceError(f"send the file in the form field 'file', not '{self.part_name}'")
        name = options[b"filename"].decode("utf-8", "replace")
        self.upload.filename = name
        if self.dest is not None:
            self.dest.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.upload.path = self.dest / _safe_name(name)
            fd = os.open(self.upload.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            self.sink = os.fdopen(fd, "wb")

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        piece = data[start:end]
        if not self.part_is_file:
            self.value.extend(piece)
            if len(self.value) > FIELD_LIMIT_BYTES:
                raise ServiceError(f"the form field '{self.part_name}' is too long")
            return
        self.upload.size += len(piece)
        if self.upload.size > self.limit:
            raise too_large(self.limit, self.what)
        self.digest.update(piece)
        if self.sink is not None:
            self.sink.write(piece)
        else:
            self.memory.extend(piece)

    def _part_end(self) -> None:
        if not self.part_is_file:
            self.upload.fields[self.part_name] = self.value.decode("utf-8", "replace")

    def result(self) -> Upload:
        self.close()
        self.upload.sha256 = self.digest.hexdigest()
        self.upload.data = bytes(self.memory)
        return self.upload

    def close(self) -> None:
        if self.sink is not None:
            self.sink.close()
            self.sink = None

    def discard(self) -> None:
        self.close()
        if self.upload.path is not None:
            self.upload.path.unlink(missing_ok=True)


def _safe_name(name: str) -> str:
    """The file name alone, without folders or odd characters."""
    base = os.path.basename(name.replace("\\", "/")).strip()
    kept = "".join(c if c.isalnum() or c in "._-" else "_" for c in base)[:200]
    return kept.lstrip(".") or "upload"
