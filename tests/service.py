"""Start the real service for tests: uvicorn over HTTP, real Celery worker processes,
SQLite or a fresh PostgreSQL database, the embedded broker or a real Redis.

Everything runs as separate processes on 127.0.0.1, exactly as in production; the
tests talk to it over HTTP and read the database only to check invariants.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
import tomllib
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import ROOT, shared_build_cache, shipped

# Another server with MEMORACE_TEST_POSTGRES (a load run beside other work on a shared one).
PG_ADMIN_URL = os.environ.get(
    "MEMORACE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
)
VENV_BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker_pid(name: str) -> int:
    """The process of a judging's or case run's worker name (HOST:PID#NONCE)."""
    return int(name.rpartition(":")[2].partition("#")[0])


def wait_for(check: Any, timeout: float, what: str, every: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@contextmanager
def postgres_database(prefix: str = "memorace_test_") -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test; dropped afterwards."""
    import psycopg

    name = f"{prefix}{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        server = PG_ADMIN_URL.split("://", 1)[1].rsplit("/", 1)[0]  # user@host:port
        yield f"postgresql+psycopg://{server}/{name}"
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def redis_server() -> Iterator[RedisServer]:
    """A private redis-server on its own port (so a test may restart it)."""
    server = RedisServer(free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()


@dataclass
class RedisServer:
    port: int
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        self.proc = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(self._answers, 10, "redis-server")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def restart(self) -> None:
        """Kill it (nothing is saved: every queued message is lost) and start it again."""
        self.stop()
        self.start()

    def _answers(self) -> bool:
        with (
            suppress(OSError),
            socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s,
        ):
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
        return False


@dataclass
class Service:
    data_dir: Path
    env: dict[str, str]
    url: str = ""
    admin_token: str = ""
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    # --- processes --------------------------------------------------------------------
    def start_api(self) -> None:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self._spawn(
            "api",
            [str(VENV_BIN / "uvicorn"), "api.app:create_app", "--factory", "--host", "127.0.0.1",
             "--port", str(port), "--no-access-log",  # api.logs.AccessLog writes one line
             # Several API processes, as scripts/serve starts them (one port, uvicorn's workers).
             "--workers", self.env.get("MEMORACE_API_PROCESSES") or "1"],
        )  # fmt: skip
        wait_for(self._healthy, 60, "the API's /healthz")

    def start_worker(
        self,
        name: str = "w1",
        beat: bool = True,
        env: dict[str, str] | None = None,
        concurrency: int = 1,
        wait: bool = True,
    ) -> subprocess.Popen[bytes]:
        """`env`: added to the service's (e.g. another host's data folder and scratch).
        `wait=False`: returns at once and `wait_ready` waits, so that workers (or a worker
        and the API) start side by side: each spends seconds importing."""
        cmd = [str(VENV_BIN / "celery"), "-A", "worker.celery_app", "worker",
               "-c", str(concurrency), "-n", f"{name}@%h", "--loglevel", "INFO"]  # fmt: skip
        if beat:
            cmd += ["-B", "--schedule", str(self.data_dir / f"beat-{name}")]
        proc = self._spawn(name, cmd, env)
        if wait:
            self.wait_ready(name)
        return proc

    def wait_ready(self, *names: str) -> None:
        """Until each named worker's log says it is ready."""
        for name in names:
            log = self.data_dir / f"{name}.log"
            wait_for(
                lambda log=log: b" ready." in log.read_bytes(), 60, f"worker {name} to be ready"
            )

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Signal the whole process group (a Celery worker and its pool children)."""
        proc = self.procs.pop(name)
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        proc.wait(30)

    def stop(self, warm: bool | None = None) -> None:
        """Warm shutdown: SIGTERM to each main process (a Celery worker then finishes its
        task and removes its sandbox); whatever is left after 30 s is killed. All are
        signalled at once: a Celery worker takes seconds to shut down warm, idle too.
        `warm=False` kills them at once: for a test done while judgings it never waits
        for (queued baselines) still run, which a warm stop would wait out (up to 30 s).
        By default it is warm only while a worker runs a task (or /healthz cannot say)."""
        if warm is None:
            warm = self._busy()
        for proc in self.procs.values() if warm else ():
            with suppress(ProcessLookupError):
                proc.terminate()
        deadline = time.monotonic() + (30 if warm else 0)
        for name, proc in list(self.procs.items()):
            with suppress(subprocess.TimeoutExpired):
                proc.wait(max(0.1, deadline - time.monotonic()))
            with suppress(Exception):
                self.kill(name, signal.SIGKILL)

    def _busy(self) -> bool:
        """Whether a live worker runs a task now, as /healthz counts them."""
        if set(self.procs) <= {"api"}:
            return False
        try:
            return httpx.get(f"{self.url}/healthz", timeout=5).json()["workers"]["busy"] > 0
        except Exception:  # no answer: stop warm, as before
            return True

    def log(self, name: str) -> str:
        return (self.data_dir / f"{name}.log").read_text(errors="replace")

    def _spawn(
        self, name: str, cmd: list[str], env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        log = (self.data_dir / f"{name}.log").open("ab")
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=self.env | (env or {}),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs[name] = proc
        return proc

    def _healthy(self) -> bool:
        with suppress(httpx.HTTPError):
            return httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200
        return False

    # --- HTTP ---------------------------------------------------------------------------
    def api(
        self, method: str, path: str, token: str | None = None, **kwargs: Any
    ) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token or self.admin_token}"}
        return httpx.request(method, f"{self.url}{path}", headers=headers, timeout=60, **kwargs)

    def add_team(self, team: str, username: str) -> str:
        """A team with one contestant; returns the contestant's API token."""
        assert self.api("POST", "/api/v1/admin/teams", json={"name": team}).status_code == 201
        body = {"username": username, "password": f"{username}-password", "team": team}
        assert self.api("POST", "/api/v1/admin/users", json=body).status_code == 201
        reply = self.api("POST", "/api/v1/admin/tokens", json={"username": username})
        assert reply.status_code == 201, reply.text
        return reply.json()["token"]

    def submit(self, token: str, problem: str, path: Path) -> dict[str, Any]:
        with path.open("rb") as fh:
            reply = self.api(
                "POST", "/api/v1/submissions", token, data={"problem": problem},
                files={"file": (path.name, fh)},
            )  # fmt: skip
        assert reply.status_code in (200, 201), reply.text
        return reply.json()

    def import_package(self, root: Path) -> dict[str, Any]:
        """Upload the package folder as a .tar.gz (the organizer); the import job once
        it has ended."""
        archive = root.parent / f"{root.name}.tar.gz"
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(root, arcname=root.name)
        with archive.open("rb") as fh:
            reply = self.api("POST", "/api/v1/admin/problems", files={"file": (archive.name, fh)})
        assert reply.status_code == 202, reply.text
        url = reply.json()["url"]

        def ended() -> dict[str, Any] | None:
            job = self.api("GET", url).json()
            return job if job["status"] in ("done", "failed") else None

        return wait_for(ended, 60, "the import job")

    def cli(self, token: str, *args: str) -> str:
        """`memorace ARGS` against this service as the token's owner; its stdout."""
        env = {**os.environ, "MEMORACE_URL": self.url, "MEMORACE_TOKEN": token,
               "COLUMNS": "200"}  # fmt: skip
        done = subprocess.run([str(VENV_BIN / "memorace"), *args], env=env, capture_output=True,
                              text=True, timeout=60, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    def wait_done(self, token: str, sub_id: int, timeout: float = 300) -> dict[str, Any]:
        def done() -> dict[str, Any] | None:
            body = self.api("GET", f"/api/v1/submissions/{sub_id}", token).json()
            return body if body["status"] in ("done", "error") else None

        try:
            return wait_for(done, timeout, f"submission {sub_id} to finish", every=0.5)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.diagnosis()}") from None

    def diagnosis(self, lines: int = 12) -> str:
        """Each process's state and the end of its log: what a CI failure must show
        (a worker that died said why only in its log)."""
        parts = []
        for name, proc in self.procs.items():
            state = "running" if proc.poll() is None else f"exited {proc.returncode}"
            tail = self.log(name).splitlines()[-lines:]
            parts.append(f"--- {name}: {state}\n" + "\n".join(line[:400] for line in tail))
        return "\n".join(parts)


def start_service(
    tmp: Path,
    problems: list[Path],
    database_url: str | None = None,
    broker_url: str | None = None,
    sandbox: str = "local",
    extra_env: dict[str, str] | None = None,
    workers: tuple[str, ...] = (),
) -> Service:
    """Bootstrap (schema, problems, organizer token) and start the API, and `workers`
    (with beat, as `start_worker`) beside it, as scripts/serve does; other workers are
    started by the test with `start_worker`."""
    data = tmp / "service"
    data.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORACE_")}
    env |= {"MEMORACE_DATA_DIR": str(data), "MEMORACE_SANDBOX": sandbox, "PYTHONUNBUFFERED": "1"}
    env |= shared_build_cache()
    # The reference planners are judged as baselines only where a test asks for them
    # (extra_env MEMORACE_BASELINES=1): elsewhere they would queue before its own work.
    env["MEMORACE_BASELINES"] = "0"
    # Hidden cases are paced to their whole budget only where a test asks for it
    # (worker.pacing: seconds per hidden case; tests/test_final_judging.py does).
    env["MEMORACE_PACE_HIDDEN"] = "0"
    # Workers look for a message on the embedded broker 10 times a second, not once: each
    # judging of a test would otherwise wait half a second on average before it starts.
    env["MEMORACE_QUEUE_POLL_S"] = "0.1"
    if database_url:
        env["MEMORACE_DATABASE_URL"] = database_url
    if broker_url:
        env["MEMORACE_BROKER_URL"] = broker_url
    env |= extra_env or {}
    service = Service(data, env)
    token_file = data / "admin.token"
    boot = subprocess.run(
        [sys.executable, "-m", "api.bootstrap", "--token-file", str(token_file), "--problems",
         *map(str, problems)],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert boot.returncode == 0, boot.stderr[-3000:]
    service.admin_token = token_file.read_text().strip()
    try:
        for name in workers:
            service.start_worker(name, wait=False)
        service.start_api()
        service.wait_ready(*workers)
    except BaseException:
        service.stop(warm=False)
        raise
    return service


def small_package(
    tmp: Path,
    slug: str = "mini-gpt2",
    public: int = 2,
    hidden: int = 1,
    source: str = "gpt2-train",
    time_limit_s: float = 10.0,
) -> Path:
    """A small problem made from the smallest cases of a shipped package (the project's
    own generated data), so that a judging takes seconds. `time_limit_s`: the anytime
    strong reference searches for 0.8 of it on every case, whatever the case's size."""
    origin = shipped(source)  # public and the tests' hidden cases (tests/conftest.py)
    meta = tomllib.loads((origin / "problem.toml").read_text())
    suffix = ".json" if meta["type"] == "offload" else ".csv"

    def path(c: dict) -> Path:
        return origin / "data" / c["split"] / f"{c['name']}{suffix}"

    cases = sorted(meta["cases"], key=lambda c: path(c).stat().st_size)
    chosen = [c for c in cases if c["split"] == "public"][:public] + [
        c for c in cases if c["split"] == "hidden"
    ][:hidden]
    pkg = tmp / slug
    for split in ("public", "hidden"):
        (pkg / "data" / split).mkdir(parents=True, exist_ok=True)
    lines = [
        f'slug = "{slug}"',
        f'name = "{meta["name"]} (small)"',
        f'type = "{meta["type"]}"',
        "version = 1",
        "",
        "[limits]",
        f"time_limit_s = {time_limit_s}",
        "memory_limit_mb = 1024",
        "",
    ]
    for c in chosen:
        shutil.copy(path(c), pkg / "data" / c["split"])
        lines += [
            "[[cases]]",
            f'name = "{c["name"]}"',
            f'split = "{c["split"]}"',
            f"capacity = {c['capacity']}",
            "",
        ]
    (pkg / "problem.toml").write_text("\n".join(lines))
    (pkg / "statement.md").write_text((origin / "statement.md").read_text())
    return pkg


@contextmanager
def serve_script(tmp: Path, extra_env: dict[str, str] | None = None) -> Iterator[tuple[str, Path]]:
    """`scripts/serve` itself (bootstrap, worker, API) on a free port with a data folder
    under `tmp`, its output in tmp/serve.log; (its URL, its data folder). Stopped after."""
    data, port = tmp / "data", free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORACE_")}
    env |= {"MEMORACE_DATA_DIR": str(data), "MEMORACE_SANDBOX": "local", "PORT": str(port),
            "VENV": str(VENV_BIN.parent), "MEMORACE_BASELINES": "0", "MEMORACE_PACE_HIDDEN": "0",
            **shared_build_cache(),
            **(extra_env or {})}  # fmt: skip
    with (tmp / "serve.log").open("wb") as log:
        proc = subprocess.Popen(
            [str(ROOT / "scripts" / "serve")], cwd=ROOT, env=env, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        yield f"http://127.0.0.1:{port}", data
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:  # a worker still starting under load may take a while to stop cleanly
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)


def answers(url: str) -> bool:
    """Whether the API at `url` answers /healthz (200, or 503 while a part is down)."""
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code in (200, 503)
    except httpx.HTTPError:
        return False
