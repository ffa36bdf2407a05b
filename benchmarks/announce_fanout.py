"""An announcement reaching a thousand open pages (issue 37): starts the real service on
127.0.0.1 (--processes API processes), opens --streams live streams of the contest's
messages (GET /api/v1/contest/events, what every open page holds) spread over
contestants' accounts, then has the jury announce --rounds times and measures, for each
announcement, when each stream heard it: arrival minus the moment the announcement's
POST was sent (an upper bound of the delivery delay; client and service share the
clock). Prints streams open, heard, duplicates, delay p50/p99/max per round and overall,
and PASS/FAIL against --delay-s.

    python benchmarks/announce_fanout.py --backend postgres --streams 1000
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.load.run import code_version, make_accounts  # noqa: E402
from benchmarks.sse_fanout import on_a_service, pct  # noqa: E402
from benchmarks.sse_streams import Stream, follow  # noqa: E402
from tests.service import Service  # noqa: E402

PATH = "/api/v1/contest/events"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--backend", default="postgres", help="postgres (+ Redis) or embedded")
    p.add_argument("--streams", type=int, default=1000)
    p.add_argument("--teams", type=int, default=50)
    p.add_argument("--users-per-team", type=int, default=2)
    p.add_argument("--processes", type=int, default=2, help="API processes")
    p.add_argument("--rounds", type=int, default=5, help="announcements, one at a time")
    p.add_argument("--opening", type=int, default=20, help="streams being opened at once")
    p.add_argument("--delay-s", type=float, default=1.0, help="target: every stream within")
    p.add_argument("--keep", action="store_true", help="keep the service's folder (logs)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    result = on_a_service(
        args, "announce", {}, lambda service, _: asyncio.run(measure(service, args))
    )
    print(report(result, args))
    return 0 if result["pass"] else 1


async def measure(service: Service, args: argparse.Namespace) -> dict[str, Any]:
    accounts = make_accounts(service, args.teams, args.users_per_team)
    streams = [
        Stream(0, accounts[i % len(accounts)]["token"], path=PATH) for i in range(args.streams)
    ]
    opening = asyncio.Semaphore(args.opening)
    tasks = [asyncio.create_task(follow(service.url, s, opening)) for s in streams]
    started = time.monotonic()
    while sum(1 for s in streams if s.opened or s.error) < len(streams):
        await asyncio.sleep(0.2)
        if time.monotonic() - started > 300:
            break
    await asyncio.sleep(1.0)  # every stream's listener is in its feed
    live = [s for s in streams if s.opened and not s.error]
    rounds = []
    async with httpx.AsyncClient(timeout=30) as client:
        for n in range(args.rounds):
            sent = time.time()
            reply = await client.post(
                f"{service.url}/api/v1/admin/announcements",
                headers={"Authorization": f"Bearer {service.admin_token}"},
                json={"text": f"announcement {n}: the fan-out benchmark"},
            )
            reply.raise_for_status()
            key = f"m{reply.json()['id']}"
            deadline = time.monotonic() + max(10.0, 5 * args.delay_s)
            while time.monotonic() < deadline and any(key not in s.cases for s in live):
                await asyncio.sleep(0.02)
            delays = [s.cases[key] - sent for s in live if key in s.cases]
            rounds.append({"heard": len(delays), "delays": delays})
            await asyncio.sleep(0.5)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    every = [d for r in rounds for d in r["delays"]]
    errors = sorted({s.error for s in streams if s.error})[:5]
    result = {"backend": args.backend, "code": code_version(), "streams": len(streams),
              "open": len(live), "errors": errors, "rounds": rounds, "delays": every,
              "duplicates": sum(s.duplicates for s in streams)}  # fmt: skip
    result["pass"] = (len(live) == len(streams) and not result["duplicates"]
                      and all(r["heard"] == len(live) for r in rounds)
                      and bool(every) and max(every) <= args.delay_s)  # fmt: skip
    return result


def report(r: dict[str, Any], args: argparse.Namespace) -> str:
    lines = [
        f"announce fan-out, {r['backend']}, code {r['code']}, {args.processes} API processes",
        f"streams: {r['open']} open of {r['streams']}; duplicates {r['duplicates']}",
    ]
    lines += [f"errors: {e}" for e in r["errors"]]
    for n, one in enumerate(r["rounds"]):
        d = one["delays"] or [float("nan")]
        lines.append(f"announcement {n}: heard by {one['heard']} of {r['open']}; delay p50 "
                     f"{pct(d, 50) * 1000:.0f} ms, p99 {pct(d, 99) * 1000:.0f} ms, "
                     f"max {max(d) * 1000:.0f} ms")  # fmt: skip
    d = r["delays"] or [float("nan")]
    lines.append(f"overall: p50 {pct(d, 50) * 1000:.0f} ms, p99 {pct(d, 99) * 1000:.0f} ms, "
                 f"max {max(d) * 1000:.0f} ms (target: all within {args.delay_s} s)")  # fmt: skip
    lines.append("PASS" if r["pass"] else "FAIL")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
