"""The judge's end of the supervisor (agent.py) that runs inside a docker sandbox.

One `docker exec` per judging starts it; each build, case or dialog is then one
request line (and, for a dialog, the script's bytes) and one framed answer, so a case
costs no engine round trip. The agent's source is dialog.py's text followed by
agent.py's: an `online` allocator's dialog runs inside the container.
"""

from __future__ import annotations

import json
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

from judge.sandbox.base import LOG_TAIL_BYTES, OUTPUT_LIMIT_BYTES
from judge.sandbox.dialog import pick_core

PLANNER_USER = "10001"
_HERE = Path(__file__).parent

AGENT_SOURCE = (_HERE / "dialog.py").read_text() + "\n" + (_HERE / "agent.py").read_text()
AGENT_GRACE_S = 5.0  # beyond the wall limit, before the agent counts as lost
HELLO = {"cmd": ["true"], "wall_s": 10}


class AgentLost(Exception):
    """The in-container supervisor died, stopped answering or answered nonsense."""


class Agent:
    """The judge's end of one supervisor exec: request lines in, framed answers out."""

    def __init__(self, container: Any):
        api = container.client.api
        exec_id = api.exec_create(
            container.id,
            ["python3", "-I", "-c", AGENT_SOURCE, str(OUTPUT_LIMIT_BYTES), str(LOG_TAIL_BYTES)],
            user=PLANNER_USER,
            workdir="/",
            stdin=True,
            stdout=True,
            stderr=False,
        )["Id"]
        self.io = api.exec_start(exec_id, socket=True)
        self.sock = getattr(self.io, "_sock", self.io)  # the raw socket, for timeouts
        self.buffer = bytearray()  # demultiplexed stdout not yet consumed

    def call(
        self, cmd: list[str], wall_s: float, fresh: bool = False, dialog: bytes | None = None
    ) -> tuple[dict[str, Any], bytes, bytes]:
        """Run `cmd`: (header, log tail, tar of /out); with `dialog` the command is an
        `online` allocator talked to with that script, and the third part is its answers
        (decimal lines), the header's "talk" the dialog's summary."""
        deadline = time.monotonic() + wall_s + AGENT_GRACE_S
        request: dict[str, Any] = {"cmd": cmd, "wall_s": wall_s, "fresh": fresh}
        if dialog is not None:
            request["dialog"] = len(dialog)
            request["core"] = pick_core()  # spread this host's workers over its cores
        try:
            self.sock.sendall(json.dumps(request).encode() + b"\n" + (dialog or b""))
            line = self._read_line(deadline)
            if not line.startswith(b"MEMORACE "):
                raise AgentLost(f"unexpected answer {line[:80]!r}")
            header = json.loads(line[len(b"MEMORACE ") :])
            tail_bytes = self._read(int(header["tail_len"]), deadline)
            archive = self._read(int(header["tar_len"]), deadline)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise AgentLost(str(exc) or type(exc).__name__) from exc
        return header, tail_bytes, archive

    def close(self) -> None:
        with suppress(Exception):
            self.sock.close()

    def _read_line(self, deadline: float) -> bytes:
        while b"\n" not in self.buffer:
            if len(self.buffer) > 2**16:
                raise AgentLost("an overlong header")
            self._fill(deadline)
        line, _, rest = bytes(self.buffer).partition(b"\n")
        self.buffer[:] = rest
        return line

    def _read(self, n: int, deadline: float) -> bytes:
        if n > 2 * OUTPUT_LIMIT_BYTES + 2**20:  # a log, a tar of /out or 4M answers
            raise AgentLost(f"an answer of {n} bytes")
        while len(self.buffer) < n:
            self._fill(deadline)
        data = bytes(self.buffer[:n])
        del self.buffer[:n]
        return data

    def _fill(self, deadline: float) -> None:
        """Read one multiplexed frame (8-byte header: stream, 0, 0, 0, big-endian size)."""
        header = self._recv_exactly(8, deadline)
        size = int.from_bytes(header[4:], "big")
        payload = self._recv_exactly(size, deadline)
        if header[0] == 1:  # stdout; anything else is not the agent's answer
            self.buffer += payload

    def _recv_exactly(self, n: int, deadline: float) -> bytes:
        data = bytearray()
        while len(data) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AgentLost("no answer in time")
            self.sock.settimeout(left)
            chunk = self.sock.recv(min(n - len(data), 2**20))
            if not chunk:
                raise AgentLost("the agent's stream ended")
            data += chunk
        return bytes(data)
