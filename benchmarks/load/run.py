"""Contest-day load test: starts the real service on 127.0.0.1 (API, one Celery worker,
the small problem tests use), makes teams and contestants through the admin API, and
runs the locust profile of benchmarks/load/locustfile.py at several client counts on
each backend (PostgreSQL + Redis, embedded SQLite + file broker).

Prints per endpoint: req/s, p50, p95, p99, errors; the API's RSS (all its processes);
and the most clients that still meet the target: no error, every read's p99 at most
--p99-ms. Needs the `load` extra (pip install -e '.[load]'); `make load` runs it.

    python benchmarks/load/run.py --clients 50,100,200,500 --duration 60
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.service import (  # noqa: E402  (the repository root on the path first)
    Service,
    postgres_database,
    redis_server,
    small_package,
    start_service,
)

LOCUSTFILE = Path(__file__).with_name("locustfile.py")
PLANNER = ROOT / "reference_solutions" / "naive.py"
PROBLEM = "mini-gpt2"
READS = ("leaderboard", "submission list", "problem page", "follow (first event)")


@dataclass
class Row:
    name: str
    requests: int
    failures: int
    rps: float
    p50: float
    p95: float
    p99: float


@dataclass
class Step:
    backend: str
    clients: int
    rows: list[Row]
    rss_peak_mb: float
    rss_end_mb: float
    failures: list[str] = field(default_factory=list)
    api_cpu_s: float = 0.0  # the API processes' CPU time (user + system) over the step
    locust_cores: float = 0.0  # the load generator's CPU time / its run time

    def cpu_ms_per_request(self) -> float:
        served = sum(r.requests for r in self.rows)
        return self.api_cpu_s / served * 1000 if served else 0.0

    def meets(self, p99_ms: float) -> bool:
        no_errors = all(r.failures == 0 for r in self.rows)
        return no_errors and all(r.p99 <= p99_ms for r in self.rows if r.name in READS)


def main() -> int:
    args = parse_args()
    steps: list[Step] = []
    for backend in args.backend.split(","):
        tmp = Path(tempfile.mkdtemp(prefix=f"memorace-load-{backend}-"))
        try:
            steps += run_backend(backend, tmp, args)
        finally:
            if args.keep:
                print(f"logs kept in {tmp}")
            else:
                shutil.rmtree(tmp, ignore_errors=True)
    print(summary(steps, args.p99_ms, args.api_processes))
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(s) for s in steps], indent=1))
    return 0 if steps and all(s.rows for s in steps) else 1


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--backend", default="postgres,embedded", help="postgres, embedded or both")
    p.add_argument("--clients", default="50,100,200,500", help="client counts, one step each")
    p.add_argument("--duration", type=int, default=60, help="seconds measured per step")
    p.add_argument("--teams", type=int, default=20)
    p.add_argument("--users-per-team", type=int, default=5)
    p.add_argument("--submit-every", type=float, default=5.0, help="seconds between submits")
    p.add_argument("--sandbox", default="local", help="the worker's sandbox (local, docker)")
    p.add_argument("--api-processes", type=int, default=os.cpu_count() or 1,
                   help="MEMORACE_API_PROCESSES (default: one per core)")  # fmt: skip
    p.add_argument("--p99-ms", type=float, default=250.0, help="the target for every read")
    p.add_argument("--json", help="write the measurements here too")
    add_env_option(p)
    p.add_argument("--keep", action="store_true", help="keep the service's folder (logs)")
    return p.parse_args()


def add_env_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="for the service, e.g. MEMORACE_READ_STALENESS_S=0")  # fmt: skip


def service_env(args: argparse.Namespace) -> dict[str, str]:
    """--env's settings (tests.service passes no MEMORACE_* variable of ours through)."""
    return dict(e.split("=", 1) for e in args.env)


@contextmanager
def backend_urls(backend: str) -> Iterator[tuple[str | None, str | None]]:
    if backend == "embedded":
        yield None, None
        return
    if backend != "postgres":
        raise SystemExit(f"unknown backend {backend!r}: postgres or embedded")
    with postgres_database() as db_url, redis_server() as redis:
        yield db_url, redis.url


def run_backend(backend: str, tmp: Path, args: argparse.Namespace) -> list[Step]:
    steps = []
    with backend_urls(backend) as (db_url, broker_url):
        env = {"MEMORACE_API_PROCESSES": str(args.api_processes), **service_env(args)}
        service = start_service(
            tmp, [small_package(tmp)], db_url, broker_url, args.sandbox, extra_env=env,
            workers=("w1",),
        )  # fmt: skip
        try:
            accounts = make_accounts(service, args.teams, args.users_per_team)
            seed(service, accounts, args.teams)
            config = tmp / "load.json"
            config.write_text(json.dumps({
                "problem": PROBLEM, "planner": str(PLANNER), "accounts": accounts,
                "submit_every_s": args.submit_every,
            }))  # fmt: skip
            for clients in map(int, args.clients.split(",")):
                if steps:
                    time.sleep(3)  # the last streams of the step before close
                step = run_step(service, backend, clients, config, tmp, args.duration)
                print(step_table(step), flush=True)
                steps.append(step)
        finally:
            service.stop()
    return steps


def make_accounts(service: Service, teams: int, per_team: int) -> list[dict[str, Any]]:
    """Teams of contestants, each with an API token; the clients are spread over them."""
    accounts = []
    for t in range(teams):
        team = f"load-team-{t:02d}"
        assert service.api("POST", "/api/v1/admin/teams", json={"name": team}).status_code == 201
        for u in range(per_team):
            name = f"load-{t:02d}-{u}"
            body = {"username": name, "password": f"{name}-password", "team": team}
            reply = service.api("POST", "/api/v1/admin/users", json=body)
            assert reply.status_code == 201, reply.text
            reply = service.api("POST", "/api/v1/admin/tokens", json={"username": name})
            assert reply.status_code == 201, reply.text
            accounts.append({"team": team, "token": reply.json()["token"]})
    return accounts


def seed(service: Service, accounts: list[dict[str, Any]], teams: int) -> None:
    """One judged submission per team, so that the leaderboard and lists are not empty."""
    per_team = len(accounts) // teams
    subs = []
    for t in range(teams):
        token = accounts[t * per_team]["token"]
        data = PLANNER.read_bytes() + f"\n# seed {t}\n".encode()
        reply = service.api(
            "POST", "/api/v1/submissions", token, data={"problem": PROBLEM},
            files={"file": (PLANNER.name, data)},
        )  # fmt: skip
        assert reply.status_code == 201, reply.text
        subs.append((token, reply.json()["id"]))
    for token, sub_id in subs:
        assert service.wait_done(token, sub_id, timeout=600)["status"] == "done"


def run_step(
    service: Service, backend: str, clients: int, config: Path, tmp: Path, duration: int
) -> Step:
    """One locust run: spawned within ~5 s, then `duration` seconds measured."""
    spawn_rate = max(10, clients // 5)
    ramp = -(-clients // spawn_rate)
    prefix = tmp / f"{backend}-{clients}"
    cmd = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless",
           "--host", service.url, "--users", str(clients), "--spawn-rate", str(spawn_rate),
           "--run-time", f"{ramp + duration}s", "--reset-stats", "--csv", str(prefix),
           "--only-summary", "--stop-timeout", "5", "--exit-code-on-error", "0"]  # fmt: skip
    env = {**service.env, "MEMORACE_LOAD_CONFIG": str(config)}
    sampler = RssSampler(service.procs["api"].pid, measure_after=ramp)
    sampler.start()
    before = os.times()
    with open(f"{prefix}.log", "wb") as log:
        done = subprocess.run(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    after = os.times()  # locust's own CPU (ramp-up included): it shares the machine
    locust_s = after.children_user + after.children_system
    locust_s -= before.children_user + before.children_system
    end_mb, api_cpu_s = sampler.stop(), sampler.cpu_s() - sampler.cpu_at_start
    log_text = Path(f"{prefix}.log").read_text(errors="replace")
    if done.returncode != 0:
        print(log_text[-3000:], file=sys.stderr)
    failures = read_failures(prefix)
    if "CPU usage above" in log_text:  # locust's own warning: the figures are the client's
        failures.append("note: the load generator reached 90 % of a core")
    rows = read_rows(prefix)
    wall = ramp + duration
    return Step(backend, clients, rows, sampler.peak_mb, end_mb, failures, api_cpu_s,
                locust_s / wall)  # fmt: skip


class RssSampler(threading.Thread):
    """The API's resident memory (its process and any children), sampled twice a second,
    and its CPU time from `measure_after` seconds on (when locust resets its stats)."""

    def __init__(self, pid: int, measure_after: float = 0.0):
        super().__init__(daemon=True)
        self.proc = psutil.Process(pid)
        self.peak_mb = 0.0
        self.halt = threading.Event()
        self.measure_after = measure_after
        self.cpu_at_start = self.cpu_s()

    def rss_mb(self) -> float:
        try:
            procs = [self.proc, *self.proc.children(recursive=True)]
            return sum(p.memory_info().rss for p in procs) / 2**20
        except psutil.Error:
            return 0.0

    def cpu_s(self) -> float:
        """CPU seconds of the API's processes so far: per request, a figure that other
        work on a shared machine does not inflate as it does latency."""
        try:
            procs = [self.proc, *self.proc.children(recursive=True)]
            return sum(sum(p.cpu_times()[:2]) for p in procs)
        except psutil.Error:
            return 0.0

    def run(self) -> None:
        if not self.halt.wait(self.measure_after):
            self.cpu_at_start = self.cpu_s()
        while not self.halt.wait(0.5):
            self.peak_mb = max(self.peak_mb, self.rss_mb())

    def stop(self) -> float:
        self.halt.set()
        self.join()
        return self.rss_mb()


def read_rows(prefix: Path) -> list[Row]:
    path = Path(f"{prefix}_stats.csv")
    if not path.exists():
        return []
    with path.open() as fh:
        return [
            Row(r["Name"], int(r["Request Count"]), int(r["Failure Count"]),
                float(r["Requests/s"]), *(_ms(r[k]) for k in ("50%", "95%", "99%")))
            for r in csv.DictReader(fh) if r["Name"] != "Aggregated"
        ]  # fmt: skip


def _ms(value: str) -> float:
    return float(value) if value not in ("", "N/A") else 0.0


def read_failures(prefix: Path) -> list[str]:
    path = Path(f"{prefix}_failures.csv")
    if not path.exists():
        return []
    with path.open() as fh:
        rows = csv.DictReader(fh)
        return [f"error: {r['Name']}: {r['Error']} x{r['Occurrences']}" for r in rows]


def step_table(step: Step) -> str:
    lines = [
        f"\n{step.backend}, {step.clients} clients (API RSS peak {step.rss_peak_mb:.0f} MiB, "
        f"end {step.rss_end_mb:.0f} MiB; API CPU {step.cpu_ms_per_request():.2f} ms a request; "
        f"locust {step.locust_cores:.2f} cores)",
        f"  {'endpoint':<22}{'req/s':>8}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'errors':>14}",
    ]
    for r in step.rows:
        errors = f"{r.failures} / {r.requests}"
        lines.append(
            f"  {r.name:<22}{r.rps:>8.1f}{r.p50:>9.0f}{r.p95:>9.0f}{r.p99:>9.0f}{errors:>14}"
        )
    lines += [f"  {f}" for f in step.failures[:8]]
    return "\n".join(lines)


def summary(steps: list[Step], p99_ms: float, processes: int) -> str:
    lines = [f"\nCode measured: {code_version()}; {processes} API process(es), "
             f"{os.cpu_count()} cores (load generator on the same machine)",
             f"Target: 0 errors, every read's p99 <= {p99_ms:.0f} ms"]  # fmt: skip
    for backend in dict.fromkeys(s.backend for s in steps):
        ok = [s.clients for s in steps if s.backend == backend and s.meets(p99_ms)]
        tried = ", ".join(str(s.clients) for s in steps if s.backend == backend)
        best = f"{max(ok)} clients" if ok else "none of the counts tried"
        lines.append(f"  {backend}: the most clients that meet it: {best} (tried {tried})")
    return "\n".join(lines)


def code_version() -> str:
    """The commit the service ran from, and whether the tree had changes on top."""
    git = ["git", "-C", str(ROOT)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True)  # fmt: skip
    if head.returncode != 0:
        return "unknown (not a git checkout)"
    return head.stdout.strip() + (" with uncommitted changes" if dirty.stdout.strip() else "")


if __name__ == "__main__":
    sys.exit(main())
