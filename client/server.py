"""The connection to a MemoRace server that the server commands share, and how its
errors read on the command line."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from client.errors import ClientError
from judge.console import fail

if TYPE_CHECKING:  # httpx loads only for the commands that talk to a server
    from client.http import Client


def connect() -> Client:
    from client.http import Client

    try:
        return Client.from_config()
    except ClientError as exc:
        raise fail(exc.message) from None


@contextmanager
def server_errors() -> Iterator[None]:
    """A ClientError becomes `error: <server message>` on stderr and exit status 2."""
    try:
        yield
    except ClientError as exc:
        raise fail(exc.message) from None
