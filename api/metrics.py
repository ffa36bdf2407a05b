"""Prometheus metrics, read from the database at scrape time (the workers write there,
so one API process sees the whole fleet): queue depth, judging latency, verdicts.
Only organizers may read them (an organizer's bearer token, or session)."""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from fastapi import Request
from fastapi.responses import PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from api.access.deps import Unauthorized, bearer, user_or_none
from api.db.models import JUDGING_STATUSES, CaseResultRow, Judging, aware
from api.db.session import session_scope
from api.settings import Settings, get_settings
from api.workers import all_workers
from judge.verdict import Verdict

BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600)
LATENCY_SAMPLE = 2000  # the newest final judgings
# Every judging state and verdict is exposed, 0 until one is seen: a series that appears
# only with the first failure would give Prometheus nothing to compare it with (an
# alert on `delta(...) > 0` would miss that first failure).
Family = TypeVar("Family", GaugeMetricFamily, CounterMetricFamily)


class DatabaseCollector(Collector):
    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily | HistogramMetricFamily]:
        with session_scope(get_settings().database_url) as db:
            yield _depth(db)
            yield _workers(db)
            yield _verdicts(db)
            yield _latency(db)


def _depth(db: Session) -> GaugeMetricFamily:
    family = GaugeMetricFamily("memorace_queue_depth", "Judgings by state", labels=["status"])
    return _counted(db, family, Judging.status, JUDGING_STATUSES)


def _verdicts(db: Session) -> CounterMetricFamily:
    family = CounterMetricFamily(
        "memorace_case_verdicts", "Case results by verdict", labels=["verdict"]
    )
    return _counted(db, family, CaseResultRow.verdict, [v.value for v in Verdict])


def _counted(db: Session, family: Family, column: Any, every: Iterable[str]) -> Family:
    """`family` with the rows per value of `column`: each of `every` first, at 0."""
    counts = dict.fromkeys(every, 0)
    counts.update(
        (value, n) for value, n in db.execute(select(column, func.count()).group_by(column))
    )
    for value, n in counts.items():
        family.add_metric([value], n)
    return family


def _workers(db: Session) -> GaugeMetricFamily:
    family = GaugeMetricFamily(
        "memorace_workers", "Workers by state, from their heartbeats", labels=["state"]
    )
    states = [w.state for w in all_workers(db, get_settings())]
    for state in ("alive", "stopping", "dead", "stopped"):
        family.add_metric([state], states.count(state))
    return family


def _latency(db) -> HistogramMetricFamily:  # type: ignore[no-untyped-def]
    rows = db.execute(
        select(Judging.enqueued_at, Judging.finished_at)
        .where(Judging.status == "final", Judging.kind != "rescore")
        .order_by(Judging.id.desc())
        .limit(LATENCY_SAMPLE)
    ).all()
    seconds = [(aware(f) - aware(e)).total_seconds() for e, f in rows if e and f]
    buckets = [(str(b), sum(1 for s in seconds if s <= b)) for b in BUCKETS]
    buckets.append(("+Inf", len(seconds)))
    family = HistogramMetricFamily(
        "memorace_judging_latency_seconds",
        f"Queue to final, over the newest {LATENCY_SAMPLE} judgings",
    )
    family.add_metric([], buckets, sum_value=sum(seconds))
    return family


def _scraper(request: Request, settings: Settings) -> bool:
    """The request carries the metrics secret (MEMORACE_METRICS_TOKEN), compared in
    constant time: it reads /metrics only, being no account's token anywhere else."""
    if not settings.metrics_token:
        return False
    try:
        given = bearer(request)
    except Unauthorized:  # not a bearer header: an organizer's check says so below
        return False
    expected = settings.metrics_token.strip().encode()
    return given is not None and hmac.compare_digest(given.encode(), expected)


def metrics_response(request: Request, db: Session, settings: Settings) -> Response:
    """The exposition for an organizer; a plain 401/403 otherwise (never the login page:
    the reader is a scraper)."""
    if _scraper(request, settings):
        return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
    user = user_or_none(request, db, settings)
    if user is None or not user.is_admin:
        status = 401 if user is None else 403
        return PlainTextResponse(
            "/metrics needs an organizer's token or the metrics token: "
            "'Authorization: Bearer <token>'\n",
            status_code=status,
            headers={"WWW-Authenticate": "Bearer"},
        )
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
