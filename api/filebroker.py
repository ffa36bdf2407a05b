"""The embedded broker: kombu's filesystem transport, made safe to share between the
API and the workers.

Kombu's own transport creates a message file and then writes it, and a worker that
takes the file in between reads an empty message: `json.loads` raises inside the
worker's consumer loop, Celery calls that unrecoverable and the worker process exits,
so nothing more is judged (a CI run lost its only worker that way, under load). Here a
message is written under a name no reader takes and renamed into place, whole; a
reader takes a file by renaming it to a hidden name (one rename: exactly one worker
wins) and sets aside, in `unreadable/`, logged, whatever it cannot read or kombu could
not deliver (a file an operator or an older producer wrote), instead of dying on it.
The judging's row stays the truth: the reaper re-sends a judging whose message was set
aside. An exchange's table (the control folder) had the same gap at its creation: it
is now created whole too, and a reader that finds one empty waits for its writer.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from contextlib import suppress
from pathlib import Path
from queue import Empty
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

log = logging.getLogger("memorace.queue")

# The class path for Celery's `broker_transport` (api.queue.celery_config).
TRANSPORT = "api.filebroker:Transport"
UNREADABLE = "unreadable"
TAKEN, PART = ".taken-", ".part"  # hidden names: no reader's filter, nor the reaper's glob
TABLE_TRIES, TABLE_WAIT_S = 50, 0.01
# A taken file of a worker killed before it read it, or a producer's unfinished write,
# is left behind; the reaper has re-sent its judging long before this age.
LEFTOVER_AGE_S = 3600.0


def message_name(queue: str) -> str:
    """Kombu's naming (time-ordered, then unique), which its readers filter on."""
    return f"{round(time.monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"


def is_message_of(filename: str, queue: str) -> bool:
    return filename.partition(".")[2] == f"{queue}.msg"


def read_message(payload: bytes) -> dict[str, Any] | None:
    """A message's envelope, or None when the bytes are not one (torn, foreign)."""
    try:
        message = loads(bytes_to_str(payload))
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    return message if isinstance(message, dict) else None


def envelope_problem(message: dict[str, Any]) -> str | None:
    """Why kombu could not deliver `message` to a consumer, or None. Kombu indexes
    its unacknowledged messages by the delivery tag (a list there raised in the worker's
    loop) and reads the headers and delivery info as mappings."""
    properties = message.get("properties")
    if not isinstance(properties, dict):
        return "no properties"
    if not isinstance(properties.get("delivery_tag"), str):
        return "no delivery tag"
    for name, where in (("delivery_info", properties), ("headers", message)):
        if not isinstance(where.get(name, {}), dict):
            return f"{name} is not a mapping"
    if not isinstance(message.get("body", ""), str):
        return "the body is not text"
    return None


def sweep(folder: Path, older_than_s: float = LEFTOVER_AGE_S) -> int:
    """Remove the taken and half-written files that dead processes left in the queue
    folder (the worker's housekeeping); how many."""
    removed, now = 0, time.time()
    for path in folder.glob(".*"):
        if path.name.startswith(TAKEN) or path.name.endswith(PART):
            with suppress(OSError):
                if now - path.stat().st_mtime > older_than_s:
                    path.unlink()
                    removed += 1
    return removed


class Channel(filesystem.Channel):
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:
        folder = Path(self.data_folder_out)
        final = folder / message_name(queue)
        part = folder / f".{final.name}{PART}"
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
        for filename in sorted(os.listdir(folder)):
            if not is_message_of(filename, queue):
                continue
            mine = folder / f"{TAKEN}{filename}"
            try:
                os.rename(folder / filename, mine)
            except OSError:
                continue  # another worker took it first
            message = self._read(mine)
            if message is not None:
                return message
        raise Empty()

    def _read(self, path: Path) -> dict[str, Any] | None:
        """The message in a file this worker took (then removed), or None when it was
        set aside. Never raises: Celery stops a worker on any error from here."""
        try:
            payload = path.read_bytes()
        except OSError as exc:
            self._set_aside(path, f"unreadable ({exc.strerror})")
            return None
        message = read_message(payload)
        why = "not JSON of an object" if message is None else self._undeliverable(message)
        if why:
            self._set_aside(path, f"{why}, {len(payload)} bytes")
            return None
        with suppress(OSError):
            path.unlink()
        return message

    def _undeliverable(self, message: dict[str, Any]) -> str | None:
        why = envelope_problem(message)
        if why is None:
            try:  # kombu's own constructor: e.g. a body its encoding cannot decode
                self.Message(message, channel=self)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                why = f"kombu cannot read it ({type(exc).__name__})"
        return why

    def _set_aside(self, path: Path, why: str) -> None:
        name = path.name.removeprefix(TAKEN)
        aside = path.parent / UNREADABLE
        try:
            aside.mkdir(mode=0o700, exist_ok=True)
            os.replace(path, aside / name)
        except OSError as exc:
            why += f"; left as {path.name} ({exc.strerror})"
        log.warning(
            "queue message %s is not a message (%s): set aside in %s; the reaper "
            "re-sends its judging", name, why, aside,
        )  # fmt: skip

    def get_table(self, exchange: str) -> list[Any]:
        # A table made by kombu's own code (an older producer) may be read between its
        # creation and its writing: wait for the writer, half a second at most.
        for _ in range(TABLE_TRIES - 1):
            try:
                return super().get_table(exchange)
            except ValueError:
                time.sleep(TABLE_WAIT_S)
        return super().get_table(exchange)

    def queue_bind(
        self, queue: str, exchange: str | None = None, routing_key: str = "",
        arguments: Any = None, **kwargs: Any,
    ) -> None:  # fmt: skip
        """Kombu skips a binding its process already knows, and notes it before it writes
        the exchange's table: another thread of the process could publish before the
        table file existed, and its messages went nowhere (lost, no error; two producers
        and three consumers in one process lost up to half). A known binding is written
        to the table here too when the table lacks it (a read when it has it)."""
        exchange = exchange or "amq.direct"
        if not self.state.has_binding(queue, exchange, routing_key):
            super().queue_bind(queue, exchange, routing_key, arguments, **kwargs)
            return
        meta = self.typeof(exchange).prepare_bind(queue, exchange, routing_key, arguments)
        self._queue_bind(exchange, *meta)

    def _queue_bind(self, exchange: str, routing_key: str, pattern: str, queue: str) -> None:
        """An exchange's first binding creates its table whole (a linked temporary file:
        created only if absent); later ones go through kombu's locked update, once the
        table reads. One that never reads (torn by an older process) is made again."""
        file = self._exchange_file(exchange)
        entry = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
        if not file.exists() and self._write_table(file, entry, replace=False):
            return
        try:
            self.get_table(exchange)
        except ValueError:
            log.warning("exchange table %s is not JSON: made again with %s", file, entry)
            self._write_table(file, entry, replace=True)
            return
        super()._queue_bind(exchange, routing_key, pattern, queue)

    def _write_table(self, file: Path, entry: tuple[str, str, str], replace: bool) -> bool:
        """The table [entry], whole: in place of `file`, or only where there is none
        (False when another process made it first)."""
        self.control_folder.mkdir(exist_ok=True)
        part = file.with_name(f".{file.name}.{uuid.uuid4()}{PART}")
        try:
            part.write_bytes(str_to_bytes(dumps([entry])))
            if replace:
                os.replace(part, file)
            else:
                os.link(part, file)
            return True
        except FileExistsError:
            return False
        except OSError as exc:
            raise ChannelError(f"cannot write {file}: {exc}") from exc
        finally:
            with suppress(OSError):
                part.unlink()


class Transport(filesystem.Transport):
    Channel = Channel
