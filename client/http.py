"""HTTP client for a MemoRace server: submit planners, follow judgings, read leaderboards."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx

from client.config import DEFAULT_URL, load_config
from client.errors import ClientError
from client.sse import SSEEvent, parse_sse

API = "/api/v1"
FINAL = frozenset({"done", "error"})
# A stream that stays silent this long (no event, no keep-alive comment) is
# treated as dropped, so a half-open connection cannot hang `follow` forever.
STREAM_READ_TIMEOUT_S = 75.0


# A dropped stream is resumed this many times in a row before `follow` polls instead.
RECONNECTS = 3


class _Dropped(Exception):
    """The event stream ended before `end`: resume it, or poll."""


class _Refused(Exception):
    """The server holds as many streams as it allows (429): poll."""


class Client:
    """One server, one token. Every method raises ClientError on failure."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        token: str | None = None,
        *,
        timeout: float = 60.0,
        poll_interval: float = 1.0,
        transport: httpx.BaseTransport | None = None,
        contest: str | None = None,
    ):
        """`contest`: sent with every request (a slug or id); None: the server's default."""
        self.url = url.rstrip("/")
        self.poll_interval = poll_interval
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(
            base_url=self.url + API,
            headers=headers,
            params={"contest": contest} if contest else None,
            timeout=httpx.Timeout(timeout, connect=10.0),
            transport=transport,
        )

    @classmethod
    def from_config(cls, env: Mapping[str, str] | None = None, **kwargs: Any) -> Client:
        config = load_config(env)
        return cls(config.url, config.token, contest=config.contest, **kwargs)

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def submit(self, path: Path | str, problem: str) -> dict[str, Any]:
        """Upload a planner; the answer has "reused": true for a byte-identical resubmission."""
        path = Path(path)
        try:
            with path.open("rb") as fh:
                files = {"file": (path.name, fh, "application/octet-stream")}
                return self._json("POST", "/submissions", data={"problem": problem}, files=files)
        except OSError as exc:
            raise ClientError(f"cannot read {path}: {exc.strerror or exc}") from None

    def submission(self, sub_id: int) -> dict[str, Any]:
        return self._json("GET", f"/submissions/{sub_id}")

    def final_picks(self, slug: str, picks: list[int] | None = None) -> dict[str, Any]:
        """The team's picks for the final judging of `slug`; `picks` replaces them."""
        path = f"/problems/{slug}/final"
        if picks is None:
            return self._json("GET", path)
        return self._json("PUT", path, json={"submissions": picks})

    def contests(self) -> list[dict[str, Any]]:
        """The contests the caller may see (a team: its own)."""
        return self._json("GET", "/contests")  # type: ignore[return-value]

    def leaderboard(self, slug: str) -> dict[str, Any]:
        return self._json("GET", f"/leaderboard/{slug}")

    def ask(self, question: str, problem: str = "") -> dict[str, Any]:
        return self._json(
            "POST", "/clarifications", json={"question": question, "problem": problem}
        )

    def messages(self, kind: str, everyone: bool = False) -> list[dict[str, Any]]:
        """`kind`: "clarifications" or "announcements"; `everyone`: every team's (jury)."""
        return self._json("GET", f"/admin/{kind}" if everyone else f"/{kind}")  # type: ignore[return-value]

    def answer(self, message_id: int, text: str, audience: str) -> dict[str, Any]:
        body = {"answer": text, "audience": audience}
        return self._json("POST", f"/admin/clarifications/{message_id}/answer", json=body)

    def announce(self, text: str, problem: str = "") -> dict[str, Any]:
        return self._json("POST", "/admin/announcements", json={"text": text, "problem": problem})

    def sign_up(self, username: str, password: str, team: str, invite: str) -> dict[str, Any]:
        body = {"username": username, "password": password, "team": team, "invite": invite}
        return self._json("POST", "/signup", json=body)

    def account(self, action: str, username: str = "", **body: Any) -> Any:
        """An account action (api.access.signup): "invite" (a new code for your team), "pending",
        or an organizer's "approve", "lock" or "password" of `username`."""
        if action == "invite":
            return self._json("POST", "/team/invite")
        if action == "pending":
            return self._json("GET", "/admin/users/pending")
        return self._json("POST", f"/admin/users/{quote(username, safe='')}/{action}", json=body)

    def live_messages(self) -> Iterator[dict[str, Any]]:
        """Questions, answers and announcements as they come (GET /contest/events),
        for as long as the caller reads; a dropped stream is resumed with Last-Event-ID
        after a pause (the same API process replays what it missed)."""
        last_id: str | None = None
        drops = 0
        while True:
            if drops:
                time.sleep(min(self.poll_interval * 2 ** min(drops - 1, 5), 10.0))
            try:
                with contextlib.closing(self._events("/contest/events", last_id)) as stream:
                    for event_id, event, data in stream:
                        last_id, drops = event_id or last_id, 0
                        if event == "message":
                            yield data
            except _Refused:
                raise ClientError(
                    "the server holds the most live streams it allows for you: close a page "
                    "or a client following a submission, or list with `clarifications`"
                ) from None
            except _Dropped:
                drops += 1

    def follow(self, sub_id: int) -> Iterator[tuple[str, dict[str, Any]]]:
        """(event, data) pairs: "status", "case", then "end" with the final Submission.

        A dropped stream is resumed with `Last-Event-ID` (the server then sends the
        status again and only the cases missed), up to RECONNECTS times in a row
        without a new case in between; after that, or when the server refuses more
        streams (429), it polls the submission every `poll_interval` seconds. Cases
        already seen are never repeated, so callers never see the difference.
        """
        seen: set[str] = set()
        last_id: str | None = None
        drops = 0
        while drops <= RECONNECTS:
            if drops:
                time.sleep(min(self.poll_interval * 2 ** (drops - 1), 10.0))
            try:
                # closing(): leaving after `end` (or the caller stopping) hangs up at once.
                path = f"/submissions/{sub_id}/events"
                with contextlib.closing(self._events(path, last_id)) as stream:
                    for event_id, event, data in stream:
                        last_id = event_id or last_id
                        if event == "case":
                            if data.get("case", "") in seen:
                                continue  # a resumed stream's overlap
                            seen.add(data.get("case", ""))
                            drops = 0  # progress: a later drop is a new one
                        yield event, data
                        if event == "end":
                            return
            except _Refused:
                break
            except _Dropped:
                drops += 1
        yield from self._poll(sub_id, seen)

    # --- internals ---

    def _events(
        self, path: str, last_id: str | None
    ) -> Iterator[tuple[str | None, str, dict[str, Any]]]:
        timeout = httpx.Timeout(STREAM_READ_TIMEOUT_S, connect=10.0)
        headers = {"Accept": "text/event-stream"}
        if last_id:
            headers["Last-Event-ID"] = last_id
        try:
            with self._http.stream("GET", path, headers=headers, timeout=timeout) as resp:
                if resp.status_code == 429:  # the server's cap on open streams
                    raise _Refused
                if resp.status_code >= 500:  # e.g. a proxy restarting: try again
                    raise _Dropped
                if resp.status_code >= 400:
                    resp.read()
                    raise _error(resp)
                for sse in parse_sse(resp.iter_bytes()):
                    yield sse.id, sse.event, _event_data(sse)
        except httpx.TransportError:
            raise _Dropped from None
        raise _Dropped  # closed without `end`

    def _poll(self, sub_id: int, seen: set[str]) -> Iterator[tuple[str, dict[str, Any]]]:
        last_status = None
        while True:
            sub = self.submission(sub_id)
            for result in sub.get("results") or []:
                if result.get("case") not in seen:
                    seen.add(result.get("case", ""))
                    yield "case", {**result, **_progress(sub)}
            status = _status_of(sub)
            if status != last_status:  # after the cases, so "done" is the last word
                last_status = status
                yield "status", status
            if sub.get("status") in FINAL:
                yield "end", sub
                return
            time.sleep(self.poll_interval)

    def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            resp = self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise ClientError(self._transport_message(exc)) from None
        if resp.status_code >= 400:
            raise _error(resp)
        try:
            return resp.json()
        except ValueError:
            raise ClientError(
                f"{self.url} answered {method} {path} with something that is not JSON "
                f"(HTTP {resp.status_code}); is MEMORACE_URL a MemoRace server?",
                resp.status_code,
            ) from None

    def _transport_message(self, exc: httpx.TransportError) -> str:
        if isinstance(exc, httpx.ConnectError):
            return (
                f"cannot connect to the MemoRace server at {self.url} ({exc}); "
                "is it running? Set MEMORACE_URL or `url` in the config file"
            )
        if isinstance(exc, httpx.TimeoutException):
            return f"the server at {self.url} did not answer in time"
        return f"talking to {self.url} failed: {exc}"


def _event_data(sse: SSEEvent) -> dict[str, Any]:
    if not sse.data:
        return {}
    try:
        data = json.loads(sse.data)
    except ValueError:
        raise ClientError(f"the server sent a `{sse.event}` event that is not JSON") from None
    if not isinstance(data, dict):
        raise ClientError(f"the server sent a `{sse.event}` event that is not a JSON object")
    return data


def _status_of(sub: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("status", "status_detail", "queue_position")
    return {**{k: sub.get(k) for k in keys}, **_progress(sub)}


def _progress(sub: Mapping[str, Any]) -> dict[str, Any]:
    return {"cases_done": sub.get("cases_done"), "cases_total": sub.get("cases_total")}


def _error(resp: httpx.Response) -> ClientError:
    """The server's {"detail": ...} as one readable line, else the HTTP reason."""
    detail: Any = None
    with contextlib.suppress(ValueError, AttributeError):  # not JSON, or not an object
        detail = resp.json().get("detail")
    if isinstance(detail, list):
        message = "; ".join(_validation_item(item) for item in detail)
    elif detail:
        message = str(detail)
    else:
        message = f"HTTP {resp.status_code} {resp.reason_phrase}".strip()
    return ClientError(message, resp.status_code)


def _validation_item(item: Any) -> str:
    """FastAPI-style {"loc": [...], "msg": ...} as "field: msg"; anything else as text."""
    if not isinstance(item, dict) or "msg" not in item:
        return str(item)
    loc = [str(p) for p in item.get("loc", []) if p not in ("body", "query", "path")]
    return f"{'.'.join(loc)}: {item['msg']}" if loc else str(item["msg"])
