"""The contest-day profile for locust (run by benchmarks/load/run.py, which starts the
service and writes the accounts file named by MEMORACE_LOAD_CONFIG).

Each simulated client is one browser tab of a contestant: one request a second on
average, with exponential think time between them (as people click), mostly reads:
the leaderboard (JSON), the team's submission list (JSON), the problem page (HTML) and
now and then a live follow (SSE) of the team's latest submission. Submissions are
rare and paced for the whole run (one every `submit_every_s`, by whichever client's
turn comes), so that no team nears the rate limit and the one worker keeps up; the
client that submitted then follows its judging live, as `memorace submit` does.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import time
import uuid
from pathlib import Path
from typing import Any

import gevent
import requests
from locust import FastHttpUser, task

CONFIG: dict[str, Any] = json.loads(Path(os.environ["MEMORACE_LOAD_CONFIG"]).read_text())
PROBLEM: str = CONFIG["problem"]
PLANNER = Path(CONFIG["planner"])
FOLLOW_MAX_S: float = CONFIG.get("follow_max_s", 20.0)
_numbers = itertools.count()
_next_submit = [time.monotonic() + CONFIG.get("submit_every_s", 5.0)]


class Contestant(FastHttpUser):
    def wait_time(self) -> float:  # the mean think time is one second
        return random.expovariate(1.0)

    def on_start(self) -> None:
        account = CONFIG["accounts"][next(_numbers) % len(CONFIG["accounts"])]
        self.auth = {"Authorization": f"Bearer {account['token']}"}
        self.latest: int | None = None  # the team's latest submission, as last listed
        self.streams = requests.Session()  # gevent-patched; closed with each stream

    @task
    def act(self) -> None:
        """One request; the weights are of reads, the submissions are paced (see above)."""
        if time.monotonic() >= _next_submit[0]:
            _next_submit[0] += CONFIG.get("submit_every_s", 5.0)
            self.submit()
            return
        choice = random.random()
        if choice < 0.45:
            self.client.get(f"/api/v1/leaderboard/{PROBLEM}", headers=self.auth, name="leaderboard")
        elif choice < 0.75:
            self.list_submissions()
        elif choice < 0.95:
            self.client.get(f"/problems/{PROBLEM}", headers=self.auth, name="problem page")
        elif self.latest is not None:
            self.follow(self.latest)
        else:
            self.list_submissions()

    def list_submissions(self) -> None:
        with self.client.get(
            "/api/v1/submissions", headers=self.auth, name="submission list", catch_response=True
        ) as reply:
            if reply.status_code == 200:
                subs = reply.json()
                self.latest = subs[0]["id"] if subs else None

    def submit(self) -> None:
        # Unique bytes: an identical upload would reuse the earlier judging (dedup).
        data = PLANNER.read_bytes() + f"\n# load {uuid.uuid4().hex}\n".encode()
        with self.client.post(
            "/api/v1/submissions", headers=self.auth, name="submit", catch_response=True,
            data={"problem": PROBLEM}, files={"file": (PLANNER.name, data)},
        ) as reply:  # fmt: skip
            if reply.status_code in (200, 201):
                self.latest = reply.json()["id"]
        if self.latest is not None:
            self.follow(self.latest)

    def follow(self, sub_id: int) -> None:
        """The live events of a submission: timed to its first event (the page shows
        the status at once), then read until `end` or FOLLOW_MAX_S (a tab closed)."""
        url = f"{self.host}/api/v1/submissions/{sub_id}/events"
        start = time.perf_counter()
        meta: dict[str, Any] = {"request_type": "SSE", "name": "follow (first event)",
                                "response_length": 0, "exception": None, "context": {}}  # fmt: skip
        try:
            with (
                gevent.Timeout(FOLLOW_MAX_S, False),
                self.streams.get(url, headers=self.auth, stream=True, timeout=30) as reply,
            ):
                if reply.status_code != 200:
                    meta["exception"] = RuntimeError(f"HTTP {reply.status_code}")
                    return
                for line in reply.iter_lines():
                    if meta["response_length"] == 0:
                        meta["response_time"] = (time.perf_counter() - start) * 1000
                    meta["response_length"] += len(line) + 1
                    if line == b"event: end":
                        break
        except requests.RequestException as exc:
            meta["exception"] = exc
        finally:
            if meta["response_length"] == 0 and meta["exception"] is None:
                why = f"no event (the stream ended, or {FOLLOW_MAX_S:.0f} s passed)"
                meta["exception"] = RuntimeError(why)
            meta.setdefault("response_time", (time.perf_counter() - start) * 1000)
            self.environment.events.request.fire(**meta)
