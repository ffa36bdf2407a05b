"""The judge's end of the `online` protocol: events out, one answer in per request.

Standard library only and no `from __future__`: the docker sandbox's agent runs this
file's text in front of its own inside the container (docker_agent.AGENT_SOURCE), so
that a request costs two pipe hops there, not an engine round trip.

The judge writes the events up to and including a request line, then reads exactly
one answer line before it writes anything more: an allocator can never read the
future. Everything is non-blocking with one deadline, so an allocator that stops
reading, stops answering, floods or closes a pipe ends the talk with a fault, never
a hang.
"""

import os
import select
import time

MAX_ANSWER_BYTES = 64
MAX_OFFSET = 2**62
CHUNK = 1 << 16

# Faults, in the words the judge reports (interactive.py maps them to verdicts).
SILENT = "silent"  # no answer before the deadline
DEAF = "deaf"  # did not read its input before the deadline
GARBAGE = "garbage"  # an answer that is not an offset
EXTRA = "extra"  # output nobody asked for
CLOSED = "closed"  # a pipe closed (stdout shut, or the allocator gone)
LOST = -2  # Talk.request when the judge cannot tell where (docker's supervisor was lost)


class Talk:
    """What happened in one dialog: the answers read and how long each took."""

    def __init__(self) -> None:
        self.answers: list[int] = []
        self.times_ns: list[int] = []  # per answered request: request written -> answer read
        self.fault = ""
        self.detail = ""
        self.request = -1  # the request (0-based) the fault concerns
        self.measured = None  # (mean, p99) µs as measured elsewhere (docker's agent)

    def fail(self, fault: str, request: int, detail: str) -> "Talk":
        self.fault, self.request, self.detail = fault, request, detail
        return self

    def request_us(self) -> tuple:
        """(mean, p99) µs per request, the first (the program's start-up) not counted."""
        if self.measured is not None:
            return self.measured
        times = sorted(self.times_ns[1:])
        if not times:
            return None, None
        p99 = times[min(len(times) - 1, (99 * len(times)) // 100)]
        return round(sum(times) / len(times) / 1000, 3), round(p99 / 1000, 3)

    def summary(self) -> dict:
        mean, p99 = self.request_us()
        return {
            "fault": self.fault,
            "detail": self.detail,
            "request": self.request,
            "answered": len(self.answers),
            "mean_us": mean,
            "p99_us": p99,
        }

    @classmethod
    def from_summary(cls, summary: dict, answers: list) -> "Talk":
        talk = cls()
        talk.answers = answers
        talk.fault, talk.detail = str(summary["fault"]), str(summary["detail"])
        talk.request = int(summary["request"])
        talk.measured = (summary.get("mean_us"), summary.get("p99_us"))
        return talk


def pick_core(preferred=None) -> int:
    """The core a dialog runs on (allocator and the judge's talking side together):
    `preferred` when this process may use it, else one of its cores chosen by its pid,
    so that workers on one host spread over the cores."""
    cores = sorted(os.sched_getaffinity(0))
    if preferred in cores:
        return preferred
    return cores[os.getpid() % len(cores)]


def request_cuts(script: bytes) -> list:
    """Where each request line of `script` ends (just past its newline)."""
    cuts = []
    at = script.find(b"\na ")
    while at >= 0:
        end = script.index(b"\n", at + 1) + 1
        cuts.append(end)
        at = script.find(b"\na ", end - 1)
    return cuts


def converse(to_fd: int, from_fd: int, script: bytes, deadline: float) -> Talk:
    """Talk over the allocator's stdin (`to_fd`, closed at the end) and stdout (`from_fd`,
    left open: the caller drains it after the exit, for output past the last answer)."""
    talk = Talk()
    os.set_blocking(to_fd, False)
    os.set_blocking(from_fd, False)
    try:
        _talk(talk, to_fd, from_fd, script, deadline)
    finally:
        os.close(to_fd)
    return talk


def _talk(talk: Talk, to_fd: int, from_fd: int, script: bytes, deadline: float) -> None:
    view = memoryview(script)
    readable = select.poll()
    readable.register(from_fd, select.POLLIN)
    writable = select.poll()
    writable.register(to_fd, select.POLLOUT)
    writable.register(from_fd, select.POLLIN)
    pending = b""
    start, now_ns = 0, time.perf_counter_ns
    for k, cut in enumerate(request_cuts(script)):
        sent = now_ns()  # the allocator may run inside the write (one core): count it
        why = _send(view[start:cut], to_fd, from_fd, writable, deadline)
        if why:
            talk.fail(why[0], k, why[1])
            return
        start = cut
        line, pending, why = _answer(from_fd, readable, pending, deadline)
        talk.times_ns.append(now_ns() - sent)
        if why:
            talk.fail(why[0], k, why[1])
            return
        if pending:
            talk.fail(EXTRA, k, f"a second line after the answer: {_show(pending)}")
            return
        offset = _offset(line)
        if offset is None:
            talk.fail(GARBAGE, k, f"the answer {_show(line)} is not an offset in [0, 2^62]")
            return
        talk.answers.append(offset)
    why = _send(view[start:], to_fd, from_fd, writable, deadline)
    if why:
        talk.fail(why[0], -1, why[1])


def _send(data: memoryview, to_fd: int, from_fd: int, poller, deadline: float) -> tuple:
    """Write `data` whole; () or (fault, detail)."""
    while data:
        try:
            data = data[os.write(to_fd, data) :]
            continue
        except BlockingIOError:
            pass
        except OSError:  # EPIPE: nobody reads the allocator's stdin any more
            return CLOSED, "the allocator stopped reading its input (stdin closed)"
        left = deadline - time.monotonic()
        if left <= 0:
            return DEAF, "the allocator did not read its input within the time limit"
        for fd, _ in poller.poll(left * 1000):
            if fd == from_fd and (unasked := _unasked(from_fd)) is not False:
                if unasked is None:  # stdout closed: no answer can come (and no busy loop)
                    return CLOSED, "stdout closed while the judge was writing"
                return EXTRA, "output while no request was waiting for an answer"
    return ()


def _unasked(fd: int) -> bool | None:
    """Whether stdout holds bytes; None when it is closed (at its end)."""
    try:
        return bool(os.read(fd, CHUNK)) or None
    except BlockingIOError:
        return False


def _answer(fd: int, poller, pending: bytes, deadline: float) -> tuple:
    """(line, bytes after it, ()) or (b"", b"", (fault, detail)). Polls before reading:
    right after a request the answer is rarely there yet (no exception per request)."""
    buffer = pending
    while b"\n" not in buffer:
        if len(buffer) > MAX_ANSWER_BYTES:
            return b"", b"", (GARBAGE, f"an answer line longer than {MAX_ANSWER_BYTES} bytes")
        left = deadline - time.monotonic()
        if left <= 0:
            return b"", b"", (SILENT, "no answer within the time limit")
        if not poller.poll(left * 1000):
            continue
        try:
            chunk = os.read(fd, CHUNK)
        except BlockingIOError:
            continue
        if not chunk:
            return b"", b"", (CLOSED, "stdout closed before the answer")
        buffer += chunk
    line, _, rest = buffer.partition(b"\n")
    if len(line) > MAX_ANSWER_BYTES:
        return b"", b"", (GARBAGE, f"an answer line longer than {MAX_ANSWER_BYTES} bytes")
    return line, rest, ()


def _offset(line: bytes):
    word = line.strip(b" \r\t")
    if not word.isdigit() or len(word) > 19:
        return None
    value = int(word)
    return value if value <= MAX_OFFSET else None


def drain(fd: int, limit: int = CHUNK) -> bytes:
    """What is left on a pipe whose writers are gone (up to `limit` bytes); closes it."""
    os.set_blocking(fd, False)
    data = b""
    try:
        while len(data) < limit:
            chunk = os.read(fd, CHUNK)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    finally:
        os.close(fd)
    return data


def _show(data: bytes) -> str:
    text = repr(bytes(data[:40]))
    return text + ("..." if len(data) > 40 else "")
