"""CPU cost of one request per read endpoint: the API's CPU time (its processes, user +
system) divided by the requests it served. Robust to a noisy machine where latency is
not: other work slows a request down but does not add to the API's own CPU time.

Starts the service as benchmarks/load/run.py does (20 teams, one judged submission
each), then sends each endpoint `--requests` requests from `--concurrency` keep-alive
connections, each client with its own team's token, and prints CPU ms per request.

    python benchmarks/load/cost.py --backend postgres,embedded --requests 2000
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import (
    PROBLEM,
    RssSampler,
    add_env_option,
    backend_urls,
    make_accounts,
    seed,
    service_env,
)

from tests.service import Service, small_package, start_service

ENDPOINTS = {
    "leaderboard": f"/api/v1/leaderboard/{PROBLEM}",
    "submission list": "/api/v1/submissions",
    "problem page": f"/problems/{PROBLEM}",
    "me": "/api/v1/me",
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--backend", default="postgres,embedded")
    p.add_argument("--requests", type=int, default=2000, help="per endpoint")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--teams", type=int, default=20)
    p.add_argument("--only", help="endpoints to measure, comma-separated (default: all)")
    p.add_argument("--profile", help="a folder: py-spy's collapsed stacks per endpoint there")
    add_env_option(p)
    args = p.parse_args()
    for backend in args.backend.split(","):
        tmp = Path(tempfile.mkdtemp(prefix=f"memorace-cost-{backend}-"))
        try:
            with backend_urls(backend) as (db_url, broker_url):
                service = start_service(tmp, [small_package(tmp)], db_url, broker_url,
                                        extra_env=service_env(args))  # fmt: skip
                try:
                    measure(service, backend, args)
                finally:
                    service.stop()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


def measure(service: Service, backend: str, args: argparse.Namespace) -> None:
    service.start_worker("w1")
    accounts = make_accounts(service, args.teams, 1)
    seed(service, accounts, args.teams)
    service.kill("w1")  # its CPU is not the API's; nothing is judged while measuring
    tokens = itertools.cycle(a["token"] for a in accounts)
    api = RssSampler(service.procs["api"].pid)
    print(f"\n{backend}: CPU ms per request (API processes), {args.requests} requests each")
    chosen = args.only.split(",") if args.only else list(ENDPOINTS)
    for name in chosen:
        spy = (
            profiler(api.proc.pid, Path(args.profile) / f"{backend}-{name}.txt")
            if args.profile
            else None
        )
        before, start = api.cpu_s(), time.perf_counter()
        errors = hammer(service.url + ENDPOINTS[name],
                        [next(tokens) for _ in range(args.concurrency)], args.requests)  # fmt: skip
        spent, wall = api.cpu_s() - before, time.perf_counter() - start
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(30)
        print(f"  {name:<18}{spent / args.requests * 1000:>7.2f} ms"
              f"{args.requests / wall:>9.0f} req/s  errors {errors}")  # fmt: skip


def profiler(pid: int, out: Path) -> subprocess.Popen[bytes]:
    """py-spy (pip install py-spy) sampling the API while one endpoint is measured."""
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [str(Path(sys.executable).with_name("py-spy")), "record", "-p", str(pid),
           "--subprocesses", "--gil", "--format", "raw", "-r", "200", "-o", str(out)]  # fmt: skip
    spy = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)  # attached before the first request
    return spy


def hammer(url: str, tokens: list[str], total: int) -> int:
    """`total` GETs of `url` from len(tokens) threads, one keep-alive client each."""
    counter = itertools.count()
    errors = [0]

    def client(token: str) -> None:
        with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=60) as c:
            while next(counter) < total:
                if c.get(url).status_code != 200:
                    errors[0] += 1

    threads = [threading.Thread(target=client, args=(t,)) for t in tokens]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors[0]


if __name__ == "__main__":
    sys.exit(main())
