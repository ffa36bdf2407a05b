"""The embedded broker: kombu's filesystem transport, made safe to share between the
API and the workers.

Kombu's own transport creates a message file and then writes it, and a worker that
takes the file in between reads an empty message: `json.loads` raises inside the
worker's consumer loop, Celery calls that unrecoverable and the worker process exits,
so nothing more is judged (a CI run lost its only worker that way, under load). Here a
message is written under a name no reader takes and renamed into place, whole; a
reader takes a file by renaming it into `taken/` (one rename: exactly one worker wins,
on one filesystem) and sets aside what still does not parse (a file an operator or an
older producer wrote) in `unreadable/`, logged, instead of dying on it. The judging's
row stays the truth: the reaper re-sends a judging whose message was set aside. An
exchange's table (the control folder) has the same gap at its creation: a reader that
finds it empty waits for its writer.
"""

from __future__ import annotations

import logging
import os
import uuid
from contextlib import suppress
from pathlib import Path
from queue import Empty
from time import monotonic, sleep
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

log = logging.getLogger("memorace.queue")

# The class path for Celery's `broker_transport` (api.queue.celery_config).
TRANSPORT = "api.filebroker:Transport"
TAKEN, UNREADABLE = "taken", "unreadable"
TABLE_TRIES, TABLE_WAIT_S = 50, 0.01


def message_name(queue: str) -> str:
    """Kombu's naming (time-ordered, then unique), which its readers filter on."""
    return f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"


def is_message_of(filename: str, queue: str) -> bool:
    return filename.partition(".")[2] == f"{queue}.msg"


def read_message(payload: bytes) -> dict[str, Any] | None:
    """A message's envelope, or None when the bytes are not one (torn, foreign)."""
    try:
        message = loads(bytes_to_str(payload))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return message if isinstance(message, dict) else None


class Channel(filesystem.Channel):
    def get_table(self, exchange: str) -> list[Any]:
        # Kombu creates an exchange's table file, then locks and writes it: a process
        # that reads in between (the API publishing while a worker starts) finds it
        # empty. Wait for the writer, about half a second at most, rather than fail.
        for _ in range(TABLE_TRIES - 1):
            try:
                return super().get_table(exchange)
            except ValueError:
                sleep(TABLE_WAIT_S)
        return super().get_table(exchange)

    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:
        folder = Path(self.data_folder_out)
        final = folder / message_name(queue)
        part = folder / f".{final.name}.part"  # no reader's filter matches it
        try:
            with part.open("xb") as fh:
                fh.write(str_to_bytes(dumps(payload)))
            os.replace(part, final)
        except OSError as exc:
            with suppress(OSError):
                part.unlink()
            raise ChannelError(f"cannot add a message to {folder}: {exc}") from exc

    def _get(self, queue: str) -> dict[str, Any]:
        folder = Path(self.data_folder_in)
        taken = folder / TAKEN
        for filename in sorted(os.listdir(folder)):
            if not is_message_of(filename, queue):
                continue
            mine = taken / filename
            try:
                taken.mkdir(mode=0o700, exist_ok=True)
                os.rename(folder / filename, mine)
            except OSError:
                continue  # another worker took it first
            try:
                payload = mine.read_bytes()
            except OSError as exc:
                raise ChannelError(f"cannot read the message {mine}: {exc}") from exc
            message = read_message(payload)
            if message is None or not self._envelope_ok(message):
                self._set_aside(mine, len(payload))
                continue
            mine.unlink()
            return message
        raise Empty()

    def _envelope_ok(self, message: dict[str, Any]) -> bool:
        """Whether kombu can make a message of it (its own constructor raises on a
        missing delivery tag or a body its encoding cannot decode)."""
        try:
            self.Message(message, channel=self)
        except (KeyError, TypeError, ValueError, AttributeError):
            return False
        return True

    def _set_aside(self, path: Path, size: int) -> None:
        aside = path.parent.parent / UNREADABLE
        with suppress(OSError):
            aside.mkdir(mode=0o700, exist_ok=True)
            os.replace(path, aside / path.name)
        log.warning(
            "queue message %s is not a message (%d bytes): set aside in %s; the reaper "
            "re-sends its judging", path.name, size, aside,
        )  # fmt: skip


class Transport(filesystem.Transport):
    Channel = Channel
