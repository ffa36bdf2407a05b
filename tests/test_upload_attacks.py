"""Attacks on the service's writes, over real HTTP on both backends (SQLite with the
embedded broker; PostgreSQL with Redis): huge and endless uploads, many files in one
request, parallel submissions against the rate limit, an organizer's writes read
back at once, package imports as jobs, the data folder's permissions and the scratch
folders of a killed worker.

Uploads are sent over a raw socket: the client streams its body while it watches
for the answer, as an attacker would, so a refusal is timed from the first byte.
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import socket
import stat
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from starlette.requests import Request

from api.access.uploads import Upload, read_upload
from api.errors import ServiceError
from tests.service import (
    Service,
    postgres_database,
    redis_server,
    small_package,
    start_service,
    wait_for,
)
from tests.test_api import _zip

LIMIT = 16 * 2**20
BOUNDARY = "memorace-attack"
PROBLEM = "mini-gpt2"


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def stack(request, tmp_path_factory) -> Iterator[tuple[Service, Path]]:
    """The service (API only; tests start workers) and its processes' TMPDIR."""
    tmp = tmp_path_factory.mktemp(f"attacks-{request.param}")
    scratch = tmp / "tmp"
    scratch.mkdir()
    env = {"TMPDIR": str(scratch), "MEMORACE_RATE_LIMIT": "20", "MEMORACE_RATE_WINDOW_S": "300"}
    with ExitStack() as stack:
        database = broker = None
        if request.param == "postgres":
            database = stack.enter_context(postgres_database())
            broker = stack.enter_context(redis_server()).url
        service = start_service(tmp, [small_package(tmp)], database, broker, extra_env=env)
        stack.callback(service.stop)
        yield service, scratch


# --- raw HTTP ---------------------------------------------------------------------------


def raw_post(
    service: Service, path: str, headers: dict[str, str], body: Iterator[bytes], within: float
) -> tuple[int, str, float, int]:
    """POST `body` chunk by chunk while watching for the answer; (status, body, seconds
    from the request's start to the answer's first byte, body bytes the server took)."""
    url = urlsplit(service.url)
    sock = socket.create_connection((url.hostname, url.port))
    lines = [
        f"POST {path} HTTP/1.1",
        f"Host: {url.netloc}",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    start = time.monotonic()
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    sock.setblocking(False)
    reply, sent, first, pending = b"", 0, None, b""
    chunks: Iterator[bytes] | None = body
    while time.monotonic() - start < within and not _complete(reply):
        readable, writable, _ = select.select([sock], [sock] if chunks else [], [], 0.05)
        if readable:
            data = sock.recv(2**16)
            first = first or time.monotonic()
            if not data:
                break
            reply += data
        elif writable and chunks is not None:
            pending = pending or next(chunks, b"")
            if not pending:
                chunks = None
                continue
            try:
                n = sock.send(pending)
            except BlockingIOError:
                continue
            except OSError:  # the server closed the connection: stop sending
                chunks = None
                continue
            sent, pending = sent + n, pending[n:]
    sock.close()
    assert first is not None, f"no answer within {within} s ({sent} bytes sent)"
    head, _, text = reply.partition(b"\r\n\r\n")
    return int(head.split()[1]), text.decode(errors="replace"), first - start, sent


def _complete(reply: bytes) -> bool:
    head, sep, body = reply.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return True


def multipart_stream(total: int, name: str = "big.py") -> Iterator[bytes]:
    """A form with `total` bytes of file content (never held in memory)."""
    yield (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="problem"\r\n\r\n{PROBLEM}\r\n'
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    block = b"#" * 2**20
    for _ in range(total // len(block)):
        yield block
    yield f"\r\n--{BOUNDARY}--\r\n".encode()


def chunked(parts: Iterator[bytes]) -> Iterator[bytes]:
    for part in parts:
        yield f"{len(part):x}\r\n".encode() + part + b"\r\n"
    yield b"0\r\n\r\n"


def form_headers(token: str | None, length: int | None) -> dict[str, str]:
    headers = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if length is None:
        headers["Transfer-Encoding"] = "chunked"
    else:
        headers["Content-Length"] = str(length)
    return headers


def written(service: Service) -> int:
    """Bytes the API process has written (files, logs, sockets) since it started."""
    io_stats = Path(f"/proc/{service.procs['api'].pid}/io").read_text()
    return int(next(v for k, v in (x.split(": ") for x in io_stats.splitlines()) if k == "wchar"))


def files_under(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


# --- uploads ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["/api/v1/submissions", "/api/v1/admin/problems", "/submit", "/admin/problems"],
)
def test_anonymous_gigabyte_upload_is_refused_before_its_body(stack, path):
    service, tmp = stack
    before, tmp_before = written(service), files_under(tmp)
    status, text, seconds, _ = raw_post(
        service, path, form_headers(None, 2**30), multipart_stream(2**30), within=15
    )
    # 401 for the API; the pages send a browser to the login page (or say 401).
    assert status in (401, 303), (status, text)
    print(f"refused after {seconds:.2f} s")  # a figure: what was written is the test
    assert written(service) - before < 2**20, "the API wrote the body somewhere"
    assert files_under(tmp) == tmp_before


def test_oversized_upload_with_a_token_is_refused_at_once_with_the_true_size(stack):
    service, _ = stack
    token = service.add_team("big-team", "big-user")
    before = written(service)
    size = 50 * 2**20
    status, text, seconds, _ = raw_post(
        service, "/api/v1/submissions", form_headers(token, size + 300), multipart_stream(size),
        within=15,
    )  # fmt: skip
    assert status == 413, text
    assert "more than 16 MiB (16777216 bytes)" in text, text
    print(f"refused after {seconds:.2f} s")  # a figure: what was written is the test
    assert written(service) - before < 2**20


def test_an_endless_chunked_upload_is_cut_at_the_limit(stack):
    service, tmp = stack
    token = service.add_team("chunk-team", "chunk-user")
    before, tmp_before = written(service), files_under(tmp)
    status, text, _, sent = raw_post(
        service, "/api/v1/submissions", form_headers(token, None),
        chunked(multipart_stream(256 * 2**20)), within=30,
    )  # fmt: skip
    assert status == 413 and "more than 16 MiB" in text, text
    assert sent < 64 * 2**20, f"the server read {sent} bytes before refusing"
    assert written(service) - before < 2**20, "the API wrote the body somewhere"
    assert files_under(tmp) == tmp_before


def test_one_request_with_fifty_files_is_refused(stack):
    service, _ = stack
    token = service.add_team("many-files", "many-user")
    files = [("file", (f"p{i}.py", f"print({i})\n".encode())) for i in range(50)]
    reply = service.api(
        "POST", "/api/v1/submissions", token, data={"problem": PROBLEM}, files=files
    )
    assert reply.status_code == 422 and "one file" in reply.json()["detail"], reply.text
    assert service.api("GET", "/api/v1/submissions", token).json() == []


# --- writes under concurrency ---------------------------------------------------------------


def test_forty_parallel_submissions_of_one_team_pass_the_limit_exactly_twenty_times(stack):
    service, _ = stack
    token = service.add_team("eager-team", "eager-user")

    def submit(i: int) -> int:
        # An archive that does not unpack: a worker, if any, fails it without running it.
        files = {"file": (f"p{i}.zip", f"not a zip {i}".encode())}
        reply = service.api(
            "POST", "/api/v1/submissions", token, data={"problem": PROBLEM}, files=files
        )
        return reply.status_code

    with ThreadPoolExecutor(40) as pool:
        codes = list(pool.map(submit, range(40)))
    assert sorted(codes) == [201] * 20 + [429] * 20, codes
    assert len(service.api("GET", "/api/v1/submissions", token).json()) == 20


def test_an_organizers_writes_are_committed_before_the_answer(stack):
    """The README's sequence, back to back on one connection as a script's client
    would send it: each step reads what the one before wrote."""
    service, _ = stack
    failures = []
    with httpx.Client(base_url=service.url, timeout=60) as client:
        admin = {"Authorization": f"Bearer {service.admin_token}"}
        for i in range(20):
            steps = [
                ("/api/v1/admin/teams", {"name": f"seq-team-{i}"}),
                ("/api/v1/admin/users", {"username": f"seq-{i}", "password": "pw-" * 4,
                                         "team": f"seq-team-{i}"}),
                ("/api/v1/admin/tokens", {"username": f"seq-{i}"}),
            ]  # fmt: skip
            replies = [client.post(path, json=body, headers=admin) for path, body in steps]
            if any(r.status_code != 201 for r in replies):
                failures.append((i, [r.text[:100] for r in replies if r.status_code != 201]))
                continue
            token = replies[-1].json()["token"]
            me = client.get("/api/v1/me", headers={"Authorization": f"Bearer {token}"})
            if me.status_code != 200:
                failures.append((i, me.text[:100]))
    assert failures == [], f"{len(failures)} of 20 sequences failed: {failures[:3]}"


# --- imports, files, workers --------------------------------------------------------------------


def package_zip(tmp: Path, slug: str) -> bytes:
    return _zip(small_package(tmp, slug=slug, public=1, hidden=1))


def test_a_package_import_is_a_job_that_a_worker_runs(stack, tmp_path):
    service, _ = stack
    service.start_worker("w1", beat=False)
    files = {"file": ("job-pkg.zip", package_zip(tmp_path, "job-pkg"))}
    reply = service.api("POST", "/api/v1/admin/problems", files=files)
    assert reply.status_code == 202, reply.text
    job = reply.json()
    assert job["status"] == "queued" and reply.headers["location"] == job["url"]

    def finished() -> dict | None:
        body = service.api("GET", job["url"]).json()
        return body if body["status"] in ("done", "failed") else None

    body = wait_for(finished, 90, "the import job", every=0.5)
    assert (body["status"], body["problem"], body["version"]) == ("done", "job-pkg", 1), body
    assert service.api("GET", "/api/v1/problems/job-pkg").status_code == 200
    listed = service.api("GET", "/api/v1/admin/imports").json()
    assert job["id"] in [j["id"] for j in listed]
    assert not any((service.data_dir / "imports").iterdir())  # the upload went with the job


def test_the_data_folder_is_owner_only(stack):
    service, _ = stack
    data = service.data_dir
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    for sub in ("artifacts", "plans", "problems", "queue", "imports", "blobs", "cache"):
        assert stat.S_IMODE((data / sub).stat().st_mode) == 0o700, sub
    # Files too, where the service makes them (folders below are behind the 0700 ones).
    files = [*data.glob("db.sqlite*"), data / "secret_key", *(data / "blobs").rglob("*"),
             *(data / "cache").rglob("*")]  # fmt: skip
    files = [p for p in files if p.is_file()]
    assert files
    for path in files:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, f"{path} is {oct(mode)}"


def test_a_killed_workers_scratch_folder_is_removed_by_the_next_worker(stack):
    service, tmp = stack
    host = socket.gethostname()
    if "w1" not in service.procs:
        service.start_worker("w1", beat=False)
    # The pool process of w1 owns a scratch folder named after it.
    owned = wait_for(lambda: list(tmp.glob(f"memorace-worker-{host}-*")), 30, "w1's scratch")
    (owned[0] / "half-written").write_bytes(b"x" * 1000)
    live = tmp / f"memorace-worker-{host}-{os.getpid()}"  # a live process's (this test's)
    other = tmp / "memorace-worker-another-host-1"  # not this host's to judge
    for folder in (live, other):
        folder.mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp / f"memorace-worker-{host}-{dead.pid}"
    stale.mkdir()
    service.kill("w1", signal.SIGKILL)
    assert all(p.exists() for p in owned)
    service.start_worker("w2", beat=False)
    wait_for(lambda: not any(p.exists() for p in [*owned, stale]), 30, "the orphans to go")
    assert live.exists() and other.exists()
    mine = [p for p in tmp.glob(f"memorace-worker-{host}-*") if p not in (live, stale)]
    assert mine, "the new worker has its own scratch folder"
    service.kill("w2", signal.SIGTERM)


# --- the form reader, fuzzed ------------------------------------------------------------------


def _form(fields: dict[str, str], files: list[tuple[str, str, bytes]]) -> bytes:
    parts = [
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
        for k, v in fields.items()
    ]
    parts += [
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{field}"; filename="{name}"\r\n'
        f"Content-Type: application/octet-stream\r\n\r\n".encode()
        + data
        + b"\r\n"
        for field, name, data in files
    ]
    return b"".join(parts) + f"--{BOUNDARY}--\r\n".encode()


def _read(body: bytes, step: int, limit: int = 64, content_type: str = "") -> Upload:
    """read_upload on `body` delivered `step` bytes at a time."""
    pieces = [body[i : i + step] for i in range(0, len(body), step)] or [b""]
    messages = [
        {"type": "http.request", "body": p, "more_body": i < len(pieces) - 1}
        for i, p in enumerate(pieces)
    ]

    async def receive() -> dict:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    ctype = content_type or f"multipart/form-data; boundary={BOUNDARY}"
    headers = [(b"content-type", ctype.encode()), (b"content-length", str(len(body)).encode())]
    scope = {"type": "http", "method": "POST", "path": "/", "headers": headers}
    return asyncio.run(read_upload(Request(scope, receive), limit))


@settings(max_examples=1000, deadline=None)
@given(
    data=st.binary(max_size=100),
    problem=st.text(
        st.characters(exclude_categories=("Cs",), exclude_characters='\r\n-"'), max_size=20
    ),
    cut=st.integers(0, 400),
    flips=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), max_size=4),
    step=st.integers(1, 64),
)
def test_the_form_reader_takes_any_bytes_and_only_says_what_is_wrong(
    data, problem, cut, flips, step
):
    """Truncated, corrupted or oversized forms: an Upload or a ServiceError, never
    another exception; an intact form comes back exactly."""
    assume(BOUNDARY.encode() not in data)
    body = bytearray(_form({"problem": problem}, [("file", "p.py", data)]))
    intact = not flips and cut >= len(body)
    for at, value in flips:
        if at < len(body):
            body[at] = value
    del body[cut:]
    try:
        upload = _read(bytes(body), step)
    except ServiceError as exc:
        assert exc.status in (400, 413, 422), exc.message
        assert not intact or len(data) > 64, exc.message
        return
    assert upload.size <= 64 and len(upload.data) == upload.size
    if intact:
        assert (upload.fields, upload.filename, upload.data) == ({"problem": problem}, "p.py", data)


@settings(max_examples=300, deadline=None)
@given(body=st.binary(max_size=300), step=st.integers(1, 64), kind=st.sampled_from(
    ["multipart/form-data", f"multipart/form-data; boundary={BOUNDARY}", "text/plain", ""]
))  # fmt: skip
def test_the_form_reader_refuses_random_bodies_with_a_message(body, step, kind):
    try:
        _read(body, step, content_type=kind or "application/octet-stream")
    except ServiceError as exc:
        assert exc.status in (400, 413, 422) and exc.message


def test_a_form_with_two_files_or_a_file_too_many_bytes_is_refused():
    with pytest.raises(ServiceError, match="one file"):
        _read(_form({}, [("file", "a.py", b"1"), ("file", "b.py", b"2")]), 5)
    with pytest.raises(ServiceError, match="is more than 64 bytes, the most"):
        _read(_form({}, [("file", "a.py", b"x" * 65)]), 7)


def test_orphan_scratch_deeper_than_pythons_stack_is_removed(tmp_path):
    from worker import scratch

    orphan = scratch.folder_for(socket.gethostname(), 2**22 + 1, tmp_path)  # no such pid
    orphan.mkdir()
    os.chdir(orphan)  # relative mkdirs: a path of 1,500 levels is longer than PATH_MAX
    try:
        for _ in range(1500):
            os.mkdir("d")
            os.chdir("d")
    finally:
        os.chdir(tmp_path)
    assert scratch.remove_orphans(tmp_path) == 1 and not orphan.exists()
