"""A Client on httpx.MockTransport and the server's answers it needs, for tests of
the client without a server."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx

from client.http import Client


def mock_client(handler: Callable[[httpx.Request], httpx.Response]) -> Client:
    return Client("http://judge.test", "t", poll_interval=0, transport=httpx.MockTransport(handler))


def result(case: str, verdict: str = "OK") -> dict[str, Any]:
    return {
        "case": case,
        "split": "public",
        "verdict": verdict,
        "message": "",
        "peak": 10,
        "lower_bound": 8,
        "score": 0.8,
        "time_s": 0.1,
        "log": "",
    }


def submission(status: str, results: list[dict[str, Any]], total: int = 2) -> dict[str, Any]:
    return {
        "id": 5,
        "problem": "toy",
        "problem_version": 1,
        "team": "t",
        "filename": "plan.py",
        "language": "python",
        "sha256": "0" * 64,
        "status": status,
        "status_detail": "",
        "queue_position": None,
        "created_at": "2026-01-01T00:00:00Z",
        "public_score": 80.0 if status == "done" else None,
        "hidden_score": None,
        "reused": False,
        "cases_total": total,
        "cases_done": len(results),
        "results": results,
    }


def sse(event: str, data: dict[str, Any], event_id: str | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id else ""
    return f"{head}event: {event}\ndata: {json.dumps(data)}\n\n".encode()
