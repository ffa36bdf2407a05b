"""Thousands of live event streams while judgings run (issue 10): starts the real
service on 127.0.0.1 (several API processes, one Celery worker running --judgings
judgings at once with the local sandbox), makes --teams teams of contestants, submits
one slow planner per team (it sleeps --case-sleep seconds per case, so that cases
spread over tens of seconds), opens --streams streams spread over the teams' users,
each following its team's submission, and only then starts the worker.

For every case event on every stream it measures the delivery delay: arrival minus
the database commit of the case (the case_results row's created_at, stamped in the
worker's transaction just before it commits, on the same clock, so the delay is an
upper bound). Contestants get a hidden case, and any public case judged after one, only
when the judging ends (api.actions.submissions): those count from the judging's finished_at.
A few streams (--stuck) never read: the others must not notice them.

Prints streams opened, events expected vs received, delay p50/p99/max, the p99 of a
leaderboard poller (--leaderboard-rps, in its own process), the API's RSS and open
files (all its processes) before and during, and PASS/FAIL against the targets.

    python benchmarks/sse_fanout.py --backend postgres --streams 2000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import resource
import shutil
import signal
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from itertools import takewhile
from pathlib import Path
from typing import Any

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.load.run import (  # noqa: E402  (the repository root on the path first)
    PLANNER,
    PROBLEM,
    RssSampler,
    backend_urls,
    code_version,
    make_accounts,
)
from benchmarks.sse_streams import Stream, follow  # noqa: E402
from tests.service import Service, small_package, start_service  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--backend", default="postgres", help="postgres (+ Redis) or embedded")
    p.add_argument("--streams", type=int, default=2000)
    p.add_argument("--teams", type=int, default=20, help="one submission per team")
    p.add_argument("--users-per-team", type=int, default=5)
    p.add_argument("--judgings", type=int, default=4, help="judgings at once (worker -c)")
    p.add_argument("--processes", type=int, default=2, help="API processes")
    p.add_argument("--case-sleep", type=float, default=1.5, help="the planner's sleep per case")
    p.add_argument("--stuck", type=float, default=0.01, help="share of streams that never read")
    p.add_argument("--opening", type=int, default=20, help="streams being opened at once")
    p.add_argument("--leaderboard-rps", type=float, default=20.0)
    p.add_argument("--pool", type=int, help="the API's connection pool (size and overflow)")
    p.add_argument("--delay-s", type=float, default=1.0, help="target: every event within")
    p.add_argument("--p99-ms", type=float, default=250.0, help="target: leaderboard p99")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds for all judgings")
    p.add_argument("--json", help="write the measurements here too")
    p.add_argument("--keep", action="store_true", help="keep the service's folder (logs)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    env = {}
    if args.pool:  # a PostgreSQL shared with other work has few connections
        env = {"MEMORACE_DB_POOL_SIZE": str(args.pool), "MEMORACE_DB_MAX_OVERFLOW": str(args.pool)}
    result = on_a_service(args, "sse", env, lambda service, db_url: measure(service, db_url, args))
    print(report(result, args))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0 if result["pass"] else 1


def on_a_service(
    args: argparse.Namespace, name: str, env: dict[str, str], run: Any
) -> dict[str, Any]:
    """run(service, database url) on a fresh service of args.backend with args.processes
    API processes, its folder removed after (kept with args.keep)."""
    # Stopped (timeout, Ctrl-C from a parent): the service, its database and Redis go too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(raise_fd_limit(args.streams * 2 + 1024), flush=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"memorace-{name}-{args.backend}-"))
    try:
        with backend_urls(args.backend) as (db_url, broker_url):
            env = {"MEMORACE_API_PROCESSES": str(args.processes), **env}
            service = start_service(tmp, [small_package(tmp)], db_url, broker_url, "local", env)
            try:
                return run(service, db_url or f"sqlite:///{service.data_dir}/db.sqlite")
            finally:
                service.stop()
    finally:
        if args.keep:
            print(f"logs kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def raise_fd_limit(want: int) -> str:
    """Each stream is a socket here and in an API process (which inherit this limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= want:
        return f"open files limit: {soft} (enough for {want})"
    new = want if hard == resource.RLIM_INFINITY else min(want, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
    short = "" if new >= want else f"; the hard limit {hard} is below the {want} wanted"
    return f"open files limit raised from {soft} to {new}{short}"


def measure(service: Service, db_url: str, args: argparse.Namespace) -> dict[str, Any]:
    accounts = make_accounts(service, args.teams, args.users_per_team)
    subs = submit_all(service, accounts, args)
    streams = spread(accounts, subs, args)
    sampler = ApiSampler(service.procs["api"].pid)
    before = {"rss_mb": sampler.rss_mb(), "fds": sampler.fds()}
    sampler.start()
    poller = Poller(service.url, accounts[0]["token"], args.leaderboard_rps)
    timing = asyncio.run(drive(service, streams, args))
    board = poller.stop(timing.pop("all_open_at"))
    sampler.stop()
    during = {"rss_mb": sampler.peak_mb, "fds": sampler.fds_peak}
    result = deliveries(streams, commit_stamps(db_url, subs.values()), args.delay_s)
    result |= {"backend": args.backend, "code": code_version(), "before": before,
               "during": during, "leaderboard": board, **timing}  # fmt: skip
    result["pass"] = passes(result, args)
    return result


def submit_all(service: Service, accounts: list[dict], args: argparse.Namespace) -> dict[str, int]:
    """One slow planner per team, queued before any worker runs: team -> submission."""
    code = f"import time\ntime.sleep({args.case_sleep})\n" + PLANNER.read_text()
    subs = {}
    for t, team in enumerate(dict.fromkeys(a["team"] for a in accounts)):
        path = service.data_dir.parent / f"planner-{t}.py"
        path.write_text(code + f"\n# team {t}\n")  # unique bytes: no reused judging
        token = next(a["token"] for a in accounts if a["team"] == team)
        subs[team] = service.submit(token, PROBLEM, path)["id"]
    return subs


def spread(accounts: list[dict], subs: dict[str, int], args: argparse.Namespace) -> list[Stream]:
    """Streams dealt round-robin over the accounts (so over the teams); every
    1/stuck-th one never reads."""
    every = round(1 / args.stuck) if args.stuck > 0 else 0
    return [
        Stream(subs[a["team"]], a["token"], reads=not (every and i % every == every - 1))
        for i, a in zip(range(args.streams), _cycle(accounts), strict=False)
    ]


def _cycle(items: list[dict]) -> Any:
    while True:
        yield from items


async def drive(service: Service, streams: list[Stream], args: argparse.Namespace) -> dict:
    """Open every stream, then start the worker, then read until every reading stream
    has its end event (or --timeout)."""
    opening = asyncio.Semaphore(args.opening)
    tasks = [asyncio.create_task(follow(service.url, s, opening)) for s in streams]
    start = time.monotonic()
    while any(not (s.opened or s.error) for s in streams):
        await asyncio.sleep(0.2)
    open_s, all_open_at = time.monotonic() - start, time.time()
    await asyncio.to_thread(lambda: service.start_worker("w1", concurrency=args.judgings))
    readers = [t for t, s in zip(tasks, streams, strict=True) if s.reads]
    await asyncio.wait(readers, timeout=args.timeout)
    judged_s = time.monotonic() - start - open_s
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return {"open_s": round(open_s, 1), "judged_s": round(judged_s, 1), "all_open_at": all_open_at}


class ApiSampler(RssSampler):
    """RSS (as benchmarks.load.run) and open files of the API's processes."""

    def __init__(self, pid: int):
        super().__init__(pid)
        self.fds_peak = 0

    def fds(self) -> int:
        try:
            return sum(p.num_fds() for p in [self.proc, *self.proc.children(recursive=True)])
        except psutil.Error:
            return 0

    def run(self) -> None:
        while not self.halt.wait(0.5):
            self.peak_mb = max(self.peak_mb, self.rss_mb())
            self.fds_peak = max(self.fds_peak, self.fds())


class Poller:
    """The leaderboard polled at a steady rate from its own process (this one is busy
    reading the streams), as contestants refreshing it."""

    def __init__(self, url: str, token: str, rps: float):
        ctx = multiprocessing.get_context("spawn")
        self.halt, self.out = ctx.Event(), ctx.Queue()
        args = (f"{url}/api/v1/leaderboard/{PROBLEM}", token, rps, self.halt, self.out, os.getpid())
        self.proc = ctx.Process(target=poll, args=args, daemon=True)
        self.proc.start()

    def stop(self, judging_from: float) -> dict[str, Any]:
        """Figures of the whole run, and the p99 once every stream was open (the
        judgings; the target's), apart from while they were being opened."""
        self.halt.set()
        times, errors = self.out.get(timeout=120)
        self.proc.join(30)
        ms = sorted(t for _, t in times)
        opening = sorted(t for at, t in times if at < judging_from)
        judging = sorted(t for at, t in times if at >= judging_from)
        return {"requests": len(ms), "errors": errors, "p50_ms": pct(ms, 50),
                "p99_ms": pct(judging, 99), "p99_opening_ms": pct(opening, 99),
                "max_ms": ms[-1] if ms else 0.0}  # fmt: skip


def poll(url: str, token: str, rps: float, halt: Any, out: Any, parent: int) -> None:
    times: list[tuple[float, float]] = []  # (when sent, ms)
    errors: list[str] = []
    with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
        start = time.monotonic()
        while not halt.is_set() and os.getppid() == parent:  # ends with a killed parent too
            sent, began = time.time(), time.perf_counter()
            try:
                status = client.get(url).status_code
                if status != 200:
                    errors.append(f"HTTP {status}")
            except httpx.HTTPError as exc:
                errors.append(type(exc).__name__)
            times.append((sent, (time.perf_counter() - began) * 1000))
            time.sleep(max(0.0, start + len(times) / rps - time.monotonic()))
    out.put((times, errors[:20] + ([f"... {len(errors)} in all"] if len(errors) > 20 else [])))


Stamps = dict[int, dict[str, float]]


def commit_stamps(db_url: str, sub_ids: Any) -> tuple[Stamps, set[tuple[int, str]]]:
    """Submission -> case -> when a contestant's stream may first show it: the case's
    commit while it is live, else the judging's end (hidden, or judged after hidden);
    and the (submission, case) pairs shown at the end."""
    from sqlalchemy import create_engine, select
    from sqlalchemy.orm import Session

    from api.db.models import Judging

    engine = create_engine(db_url)
    stamps: Stamps = {}
    at_end: set[tuple[int, str]] = set()
    try:
        with Session(engine) as db:
            for sub_id in sub_ids:
                last = db.scalars(
                    select(Judging).where(Judging.submission_id == sub_id).order_by(Judging.id)
                ).all()[-1]
                rows = sorted(last.results, key=lambda r: r.id)
                live = {r.id for r in takewhile(lambda r: r.split == "public", rows)}
                end = _epoch(last.finished_at) if last.finished_at else float("inf")
                stamps[sub_id] = {
                    r.case: _epoch(r.created_at) if r.id in live else end for r in rows
                }
                at_end |= {(sub_id, r.case) for r in rows if r.id not in live}
    finally:
        engine.dispose()
    return stamps, at_end


def _epoch(stamp: datetime) -> float:
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)).timestamp()


def deliveries(
    streams: list[Stream], known: tuple[Stamps, set[tuple[int, str]]], target_s: float
) -> dict[str, Any]:
    stamps, at_end = known
    reading = [s for s in streams if s.reads]
    timed = [
        (arrived - stamps[s.sub_id][case], (s.sub_id, case) in at_end)
        for s in reading
        for case, arrived in s.cases.items()
        if case in stamps[s.sub_id]
    ]
    delays = sorted(d for d, _ in timed)
    firsts = sorted(t for cases in stamps.values() for t in cases.values())
    return {
        "streams": len(streams), "stuck": len(streams) - len(reading),
        "opened": sum(1 for s in streams if s.opened),
        "open_at_first_case": _open_at(streams, firsts[0]) if firsts else 0,
        "expected": sum(len(stamps[s.sub_id]) for s in reading),
        "received": sum(len(s.cases) for s in reading),
        "duplicates": sum(s.duplicates for s in reading),
        "incomplete": sum(1 for s in reading if not _complete(s, stamps[s.sub_id])),
        "errors": sorted({s.error for s in streams if s.error})[:10],
        "delay_p50_s": pct(delays, 50), "delay_p99_s": pct(delays, 99),
        "delay_max_s": delays[-1] if delays else 0.0,
        "late": sum(1 for d in delays if d > target_s),
        "delay_max_live_s": max((d for d, end in timed if not end), default=0.0),
        "delay_max_at_end_s": max((d for d, end in timed if end), default=0.0),
    }  # fmt: skip


def _complete(stream: Stream, stamps: dict[str, float]) -> bool:
    return stream.ended and stream.cases.keys() == stamps.keys()


def _open_at(streams: list[Stream], when: float) -> int:
    return sum(1 for s in streams if s.opened and s.opened <= when < (s.closed or when + 1))


def pct(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def passes(r: dict[str, Any], args: argparse.Namespace) -> bool:
    return (
        r["opened"] == r["streams"] and r["incomplete"] == 0 and r["duplicates"] == 0
        and r["received"] == r["expected"] > 0 and r["delay_max_s"] <= args.delay_s
        and not r["leaderboard"]["errors"] and r["leaderboard"]["p99_ms"] <= args.p99_ms
    )  # fmt: skip


def report(r: dict[str, Any], args: argparse.Namespace) -> str:
    b, d, lb = r["before"], r["during"], r["leaderboard"]
    per_stream_kb = (d["rss_mb"] - b["rss_mb"]) * 1024 / max(r["streams"], 1)
    return "\n".join([
        f"\nSSE fan-out, {r['backend']}, code {r['code']}: {args.processes} API processes, "
        f"{args.teams} teams x {args.users_per_team} users, {args.judgings} judgings at once",
        f"  streams opened      {r['opened']} / {r['streams']} in {r['open_s']} s "
        f"({r['stuck']} never read); open at the first case commit: {r['open_at_first_case']}",
        f"  case events         {r['received']} received / {r['expected']} expected, "
        f"{r['duplicates']} duplicates, {r['incomplete']} streams incomplete "
        f"(the worker's start and the judgings: {r['judged_s']} s)",
        f"  delivery delay      p50 {r['delay_p50_s']:.3f} s, p99 {r['delay_p99_s']:.3f} s, "
        f"max {r['delay_max_s']:.3f} s; {r['late']} over {args.delay_s:g} s",
        f"  delay max by kind   live cases {r['delay_max_live_s']:.3f} s, "
        f"cases shown at the judging's end {r['delay_max_at_end_s']:.3f} s",
        f"  leaderboard         {lb['requests']} requests, p50 {lb['p50_ms']:.0f} ms, "
        f"p99 {lb['p99_ms']:.0f} ms once all streams were open ({lb['p99_opening_ms']:.0f} ms "
        f"while they opened), max {lb['max_ms']:.0f} ms, {len(lb['errors'])} errors",
        f"  API RSS             before {b['rss_mb']:.0f} MiB, peak {d['rss_mb']:.0f} MiB "
        f"(~{per_stream_kb:.0f} KiB per stream)",
        f"  API open files      before {b['fds']}, peak {d['fds']}",
        *(f"  error: {e}" for e in r["errors"] + lb["errors"][:5]),
        f"  {'PASS' if r['pass'] else 'FAIL'}: every case event on every stream within "
        f"{args.delay_s:g} s of its commit, leaderboard p99 <= {args.p99_ms:.0f} ms, no error",
    ])  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
