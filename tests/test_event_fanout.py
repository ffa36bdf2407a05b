"""Thousands of live streams: what breaks past the defaults, and the benchmark that
measures it (benchmarks/sse_fanout.py) still runs.

- A stream is a socket: an API process started under the common open-files limit of
  1024 (here 256) stalled its accept loop once the streams used the files up, so every
  request waited, not only streams. It now raises its soft limit toward the hard one,
  and caps its streams below what the limit allows (429 past it, never a stall).
- Stream requests bypassed the API's bound on requests in flight (api.access.inflight): a
  burst of them (every browser reconnecting at once) took more pooled connections
  than there are, and requests timed out on the pool after 30 s. A stream now counts
  until its response starts.
- A client that never reads keeps only the newest view of its submission, however
  many changes it misses.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import subprocess
import sys
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
from hypothesis import given
from hypothesis import strategies as st

from api.live.broadcast import Viewer
from api.live.fdlimit import FD_RESERVE, plan
from api.live.views import View
from benchmarks.sse_streams import Stream, _events, _note, follow
from tests.conftest import ROOT
from tests.service import small_package, start_service
from tests.test_event_streams import queued_submission

BENCH = ROOT / "benchmarks" / "sse_fanout.py"
LOW_LIMIT, BEYOND = 256, 44  # the API's inherited soft limit; streams past it
STORM = 400


@contextmanager
def soft_open_files(limit: int) -> Iterator[None]:
    """Processes started inside inherit a soft limit of `limit` (the hard one stays)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(limit, soft), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def hold(url: str, streams: list[Stream], at_once: int = 20) -> None:
    """Open every stream, `at_once` at a time (never reading past the headers), answer
    /healthz while they are all open, then hang up."""

    async def main() -> None:
        opening = asyncio.Semaphore(at_once)
        tasks = [asyncio.create_task(follow(url, s, opening)) for s in streams]
        while any(not (s.opened or s.error) for s in streams):
            await asyncio.sleep(0.2)
        async with httpx.AsyncClient(timeout=30) as client:
            assert (await client.get(f"{url}/healthz")).status_code == 200
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(main())


def low_limit() -> int:
    """The soft limit the API inherits: LOW_LIMIT, or more where this test process
    already holds that many files (earlier tests' pools), which it must keep opening."""
    return max(LOW_LIMIT, len(os.listdir("/proc/self/fd")) + 64)


def test_streams_past_a_low_open_files_limit(tmp_path) -> None:
    low = low_limit()
    streams_wanted = low + BEYOND  # more streams than the API's inherited soft limit
    env = {"MEMORACE_EVENT_STREAMS_PER_USER": str(streams_wanted)}
    with soft_open_files(low):
        svc = start_service(tmp_path, [small_package(tmp_path)], extra_env=env)
    try:
        token, sub_id = queued_submission(svc, "many")
        streams = [Stream(sub_id, token, reads=False) for _ in range(streams_wanted)]
        hold(svc.url, streams)
        errors = sorted({s.error for s in streams if s.error})
        assert not errors, errors
        assert all(s.opened for s in streams)
    finally:
        svc.stop()


def test_a_reconnect_storm_opens_every_stream(tmp_path) -> None:
    """Every browser reconnects at once (an API restart): 400 stream requests at once
    into one API process, more than its connection pool (80) and threads (40)."""
    env = {"MEMORACE_EVENT_STREAMS_PER_USER": str(STORM)}
    svc = start_service(tmp_path, [small_package(tmp_path)], extra_env=env)
    try:
        token, sub_id = queued_submission(svc, "storm")
        streams = [Stream(sub_id, token, reads=False) for _ in range(STORM)]
        hold(svc.url, streams, at_once=STORM)
        errors = sorted({s.error for s in streams if s.error})
        assert not errors, errors
        assert "QueuePool limit" not in svc.log("api")
    finally:
        svc.stop()


limits = st.integers(min_value=0, max_value=2**40) | st.just(resource.RLIM_INFINITY)


@given(st.integers(min_value=0, max_value=10**6), limits, limits)
def test_the_stream_cap_fits_the_open_files_limit(wanted: int, soft: int, hard: int) -> None:
    new_soft, cap = plan(wanted, soft, hard)
    unbounded = resource.RLIM_INFINITY
    assert 0 <= cap <= wanted
    assert new_soft == soft or new_soft <= hard or hard == unbounded  # never past the hard
    assert new_soft == unbounded or cap <= max(new_soft - FD_RESERVE, 0)
    if soft != unbounded and new_soft != unbounded:
        assert new_soft >= soft  # never lowered


PIECES = [
    b"event: case",
    b"event: status",
    b"event: end",
    b"data: ",
    b'data: {"case": 1}',
    b"data: []",
    b"data: {}",
    b"\n",
    b"\n\n",
    b"\r\n",
    b"5\r\n",
    b"0\r\n\r\n",
    b"zz\r\n",
]
bodies = st.binary(max_size=2000) | st.lists(
    st.sampled_from(PIECES) | st.binary(max_size=20), max_size=60
).map(b"".join)


@given(bodies, st.booleans())
def test_the_benchmark_client_reads_any_body(body: bytes, chunked: bool) -> None:
    """What the benchmark's client reads: any bytes end its stream quietly or with one
    of the errors it reports (follow catches them), never anything else."""

    async def main() -> None:
        reader = asyncio.StreamReader()
        reader.feed_data(body)
        reader.feed_eof()
        stream = Stream(1, "t")
        try:
            async for name, data, _ in _events(reader, chunked):
                _note(stream, name, data, 0.0)
        except (ValueError, asyncio.IncompleteReadError):
            pass

    asyncio.run(main())


def test_a_viewer_that_never_takes_keeps_only_the_newest_view() -> None:
    async def main() -> tuple[View | None, int]:
        viewer = Viewer("contestant")
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        for n in range(20_000):
            viewer.offer(View(n, f'{{"n": {n}}}', ((1, "x" * 200),), False, "{}", False))
        grown = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.stop()
        return await viewer.next(0.1), grown

    newest, grown = asyncio.run(main())
    assert newest is not None and newest.judging_id == 19_999
    assert grown < 64 * 1024, grown  # one view, not 20,000 (about 10 MB)


def test_the_fanout_benchmark_runs_small(tmp_path) -> None:
    """100 streams (one never reads) on one judging: every reading stream gets every
    case event once. The delays are printed, not asserted (the machine is shared)."""
    out = tmp_path / "sse.json"
    cmd = [sys.executable, str(BENCH), "--backend", "embedded", "--streams", "100",
           "--teams", "1", "--users-per-team", "2", "--judgings", "1", "--case-sleep", "0.3",
           "--leaderboard-rps", "5", "--delay-s", "1e9", "--p99-ms", "1e9",
           "--json", str(out)]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    print(done.stdout[-2000:])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["opened"] == result["streams"] == 100 and result["stuck"] == 1
    assert result["received"] == result["expected"] == 99 * 3  # the package's 3 cases
    assert result["incomplete"] == result["duplicates"] == 0
    assert result["leaderboard"]["requests"] > 0 and result["during"]["rss_mb"] > 0
