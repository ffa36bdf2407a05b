"""The Grafana dashboard (docker/grafana/memorace.json), the alert rules beside it and the
Prometheus scrape example ask only for what /metrics really exposes: every metric name
in every PromQL expression, every label it matches on, and every label value it compares
with, checked against the exposition of a real app (in-process, SQLite) after activity
that makes each labelled series exist. A renamed metric, label or verdict fails here."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from api import queue
from api.settings import get_settings
from judge.verdict import Verdict
from tests.conftest import ROOT
from tests.test_api import contestant, submit
from tests.test_operator_docs import serves
from tests.test_package import make_package

GRAFANA = ROOT / "docker" / "grafana"
DASHBOARD = GRAFANA / "memorace.json"
SCRAPE_CONFIG = GRAFANA / "prometheus.yml"
ALERTS = GRAFANA / "memorace-alerts.yml"
# Series Prometheus makes itself for each scrape, not the service.
PROMETHEUS_MADE = {"up", "scrape_duration_seconds", "scrape_samples_scraped"}
# Judging states the workers write (worker/judging.py), besides "queued" (a submission).
WORKER_STATES = ("running", "final", "failed")


# --- the exposition -------------------------------------------------------------------


@dataclass
class Exposition:
    """Sample names, with the label names and values each one was seen with."""

    labels: dict[str, set[str]] = field(default_factory=dict)
    values: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    empty_families: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str) -> Exposition:
        seen = cls()
        for family in text_string_to_metric_families(text):
            if not family.samples:
                seen.empty_families.append(family.name)
            for sample in family.samples:
                seen.labels.setdefault(sample.name, set()).update(sample.labels)
                for label, value in sample.labels.items():
                    seen.values.setdefault((sample.name, label), set()).add(value)
        return seen


def _activity(client: TestClient) -> None:
    """A queued submission through the API, then what workers would have written: a
    judging in each state they leave, a case result of every verdict, an alive and a
    dead worker (no worker runs here: a judging would take minutes of CPU)."""
    from api.db.models import CaseResultRow, Judging, WorkerRow, utcnow
    from api.db.session import session_scope

    alice = contestant(client)
    reply = submit(client, alice)
    assert reply.status_code == 201, reply.text
    submission = reply.json()["id"]
    now = utcnow()
    with session_scope(get_settings().database_url) as db:
        judgings = {}
        for state in WORKER_STATES:
            judging = Judging(submission_id=submission, status=state, kind="rejudge")
            judging.enqueued_at, judging.finished_at = now - timedelta(seconds=42), now
            db.add(judging)
            judgings[state] = judging
        db.flush()
        for verdict in Verdict:
            db.add(
                CaseResultRow(judging_id=judgings["final"].id, case=f"c-{verdict.value}",
                              split="public", weight=1.0, verdict=verdict.value, lower_bound=1)
            )  # fmt: skip
        db.add(WorkerRow(name="celery@alive", last_seen=now))
        db.add(WorkerRow(name="celery@dead", last_seen=now - timedelta(days=1)))


@dataclass
class Served:
    seen: Exposition  # after _activity
    fresh: Exposition  # before it: nothing judged yet
    app: FastAPI


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[Served]:
    """The expositions an organizer's scrape gets before and after _activity."""
    from api.app import create_app
    from api.bootstrap import bootstrap

    tmp = tmp_path_factory.mktemp("grafana")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MEMORACE_DATA_DIR", str(tmp / "data"))
        get_settings.cache_clear()
        queue.producer.cache_clear()
        token = bootstrap(get_settings(), "admin", [make_package(tmp / "pkg")])
        with TestClient(create_app()) as client:
            client.headers["Authorization"] = f"Bearer {token}"
            fresh = Exposition.parse(client.get("/metrics").text)
            _activity(client)
            reply = client.get("/metrics")
            assert reply.status_code == 200, reply.text
            yield Served(Exposition.parse(reply.text), fresh, client.app)
        get_settings.cache_clear()
        queue.producer.cache_clear()


# --- PromQL, as far as the dashboard and the rules use it -------------------------------

MATCHER = re.compile(r'([A-Za-z_]\w*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
SELECTOR = re.compile(r"([A-Za-z_:][\w:]*)?\s*\{([^}]*)\}")
GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
IDENTIFIER = re.compile(r"[A-Za-z_:][\w:]*(\s*\()?")
KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan"}


@dataclass(frozen=True)
class Selector:
    metric: str
    matchers: tuple[tuple[str, str, str], ...]  # (label, operator, value)


def selectors(expr: str) -> list[Selector]:
    """Every metric an expression reads, with its label matchers."""
    found = []
    for name, body in SELECTOR.findall(expr):
        assert name, f"a selector without a metric name in {expr!r}"
        found.append(Selector(name, tuple(MATCHER.findall(body))))
    rest = SELECTOR.sub(" ", expr)
    rest = re.sub(r"\[[^\]]*\]", " ", rest)  # range windows: [5m]
    rest = GROUPING.sub(" ", rest)
    rest = re.sub(r"(?<![\w:])\d[\w.]*", " ", rest)  # numbers and durations: 0.5, 5m, 1e3
    for match in IDENTIFIER.finditer(rest):
        word = match.group(0)
        if match.group(1) is None and word.lower() not in KEYWORDS:
            found.append(Selector(word, ()))
    return found


def problems_with(expr: str, seen: Exposition) -> list[str]:
    """What in `expr` the exposition does not have (empty: all of it is there)."""
    wrong = []
    for selector in selectors(expr):
        if selector.metric in PROMETHEUS_MADE:
            continue
        if selector.metric not in seen.labels:
            wrong.append(f"{selector.metric}: no such series on /metrics")
            continue
        for label, op, value in selector.matchers:
            if label not in seen.labels[selector.metric]:
                wrong.append(f"{selector.metric}: no label {label!r}")
                continue
            known = seen.values.get((selector.metric, label), set())
            wanted = value.split("|") if op in ("=~", "!~") else [value]
            wrong += [f"{selector.metric}{{{label}={v!r}}}: never seen" for v in wanted
                      if v not in known]  # fmt: skip
    return wrong


# --- the files --------------------------------------------------------------------------


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def panels(board: dict) -> list[dict]:
    """Every panel, those inside collapsed rows too; rows themselves left out."""
    out = []
    for panel in board["panels"]:
        out += [panel] if panel["type"] != "row" else panel.get("panels", [])
    return out


def alert_rules() -> list[dict]:
    yaml = pytest.importorskip("yaml")
    loaded = yaml.safe_load(ALERTS.read_text())
    return [rule for group in loaded["groups"] for rule in group["rules"]]


def every_expression() -> list[tuple[str, str]]:
    """(where, PromQL) of each dashboard target and each alert rule."""
    found = [
        (f"panel {p['title']!r} {t['refId']}", t["expr"])
        for p in panels(dashboard())
        for t in p["targets"]
    ]
    return found + [(f"alert {r['alert']}", r["expr"]) for r in alert_rules()]


# --- the tests --------------------------------------------------------------------------


def test_the_dashboard_is_a_grafana_model_on_a_chosen_prometheus():
    board = dashboard()
    assert board["schemaVersion"] >= 36 and board["uid"] and board["title"] == "MemoRace"
    assert [i["name"] for i in board["__inputs"]] == ["DS_PROMETHEUS"]
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["DS_PROMETHEUS"]["type"] == "datasource"
    assert variables["DS_PROMETHEUS"]["query"] == "prometheus"
    nested = [p for row in board["panels"] for p in row.get("panels", [])]
    ids = [p["id"] for p in (*board["panels"], *nested)]
    assert len(ids) == len(set(ids)), "panel ids repeat"
    for panel in panels(board):
        assert panel["targets"], f"{panel['title']}: no query"
        assert panel["description"], f"{panel['title']}: says nothing of what it shows"
        assert {"x", "y", "w", "h"} <= set(panel["gridPos"])
        for source in (panel["datasource"], *(t["datasource"] for t in panel["targets"])):
            assert source == {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
    print(f"{len(panels(board))} panels, {len(every_expression())} expressions")


def test_every_expression_reads_what_metrics_exposes(served):
    seen = served.seen
    assert not seen.empty_families, "activity should give every family a sample"
    wrong = {where: problems_with(expr, seen) for where, expr in every_expression()}
    assert not {w: p for w, p in wrong.items() if p}
    read = {s.metric for _, expr in every_expression() for s in selectors(expr)}
    ours = sorted(name for name in seen.labels if name.startswith("memorace_"))
    print("memorace series on /metrics:", ", ".join(ours))
    # Each family the service exposes has a panel; a new one should get one too.
    families = {re.sub(r"_(bucket|sum|count|total)$", "", name) for name in ours}
    unread = {f for f in families if not any(m.startswith(f) for m in read)}
    assert not unread, f"no panel reads {unread}"


def test_a_fresh_service_exposes_every_label_an_expression_compares_with(served):
    # At 0 before the first failure, so that `delta(...) > 0` sees that failure.
    wrong = {where: problems_with(expr, served.fresh) for where, expr in every_expression()}
    assert not {w: p for w, p in wrong.items() if p}


def test_every_expression_reads_at_least_one_series():
    for where, expr in every_expression():
        assert selectors(expr), f"{where}: no metric found in {expr!r}"


@pytest.mark.parametrize(
    "renamed",
    [
        'memorace_queue_depth_x{status="queued"}',  # a metric renamed
        'memorace_queue_depth{state="queued"}',  # a label renamed
        'memorace_queue_depth{status="waiting"}',  # a label value renamed
        "histogram_quantile(0.9, sum by (le) (memorace_judging_latency_bucket))",
        'sum by (verdict) (delta(memorace_case_verdicts_total{verdict=~"OK|TLE"}[5m]))',
        "memorace_case_verdicts",  # a counter read without its _total
    ],
)
def test_a_renamed_metric_is_caught(served, renamed):
    assert problems_with(renamed, served.seen)


def test_the_parser_sees_through_functions_groupings_and_windows():
    expr = 'sum by (le) (rate(a_b_bucket{x="1",y=~"2|3"}[5m])) / on (job) c_total offset 5m'
    assert selectors(expr) == [
        Selector("a_b_bucket", (("x", "=", "1"), ("y", "=~", "2|3"))),
        Selector("c_total", ()),
    ]


def test_the_scrape_config_reads_metrics_with_a_token_file(served):
    app = served.app
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load(SCRAPE_CONFIG.read_text())
    (job,) = [j for j in config["scrape_configs"] if j["job_name"] == "memorace"]
    assert job["metrics_path"] == "/metrics" and serves(app, "GET", job["metrics_path"])
    assert job["authorization"]["credentials_file"].endswith(".token")
    # The dashboard's and the rules' `job` matchers name this job.
    for where, expr in every_expression():
        for selector in selectors(expr):
            jobs = [v for label, _, v in selector.matchers if label == "job"]
            assert all(v == job["job_name"] for v in jobs), where
    assert [GRAFANA / name for name in config["rule_files"]] == [ALERTS]


def test_the_rules_are_complete():
    for rule in alert_rules():
        assert rule["alert"].startswith("MemoRace") and rule["annotations"]["summary"]
        assert rule["labels"]["severity"] in ("warning", "critical")


def test_the_states_made_here_are_the_workers_own():
    # _activity writes these states by hand; the workers must still write them.
    source = (ROOT / "worker" / "judging.py").read_text()
    for state in WORKER_STATES:
        assert f'"{state}"' in source, state


def test_the_guide_names_the_files():
    guide = ROOT / "docs" / "operator" / "monitoring.md"
    text = guide.read_text()
    for path in (DASHBOARD, SCRAPE_CONFIG, ALERTS):
        assert str(path.relative_to(ROOT)) in text, path.name
    read = {s.metric for _, expr in every_expression() for s in selectors(expr)}
    families = {re.sub(r"_(bucket|sum|count|total)$", "", m) for m in read - PROMETHEUS_MADE}
    assert families and not {f for f in families if f not in text}
