"""Upgrades from every earlier schema revision, with data in it, on SQLite and PostgreSQL.

"The previous release": the project has no release tags, so every Alembic revision
before head stands for an installation left by some earlier release. For each one a
database is migrated to it, filled by plain SQL with a row in every table that exists
then and a value in every column that exists then (integers near 2**62 where a column
is BigInteger, non-ASCII text, bytes, stamps to the microsecond), then brought to head
the way the service does at start (api.db.session.migrate). Every row written is
still there with every value; what head adds holds (contest 1 owns what was there);
the service authenticates the old tokens and lists the old submissions.

No upgrade() drops or renames a table or a column (0001..0014 read: they create
tables, add columns, fill new ones), so every column written at revision R exists at
head. SQLite's batch mode copies a table whole to add a column: that copy is what the
values here prove exact.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.script import ScriptDirectory
from fastapi.testclient import TestClient

from api.actions.problems import package_digest
from api.blobs import plan_file
from api.db.session import migrate
from api.settings import get_settings
from judge.package import load_problem
from tests.migration_rows import (
    BASELINES_TEAM,
    T0,
    TOKENS,
    Filler,
    alembic_config,
    changed_rows,
    check_contest_one,
    check_service,
    fill,
)
from tests.service import postgres_database
from tests.test_package import make_package
from worker.judging import submission_file

SCRIPTS = ScriptDirectory.from_config(alembic_config("sqlite://"))
HEAD = SCRIPTS.get_current_head()
EARLIER = sorted(r.revision for r in SCRIPTS.walk_revisions() if r.revision != HEAD)
BACKENDS = ["sqlite", "postgresql"]

BIG = 2**62 + 12345  # no float holds it: a BigInteger that passed through one would differ
TEXT = "équipe ☃ 雪 — 𝔐 «ok»"  # accents, CJK, an astral-plane character
BYTES = bytes(range(256)) * 3 + b"\x00\xff"
# Stamps as the service writes them (UTC, api.db.models.utcnow), to the microsecond.
S1 = datetime(2026, 11, 29, 23, 59, 59, 999999, tzinfo=UTC)
S2 = datetime(2036, 2, 29, 12, 0, 0, 1, tzinfo=UTC)


def _every_column(f: Filler, team: dict[str, int]) -> None:
    """On top of `fill`: a value in every column it leaves to defaults, and a row in every
    table it leaves empty (those that exist at this revision)."""
    red, alice = team["red"], f.ids("users")[1]
    sub, judging = f.ids("submissions")[0], f.ids("judgings")[0]
    version = f.ids("problem_versions")[0]
    f.set("contest", {"id": 1}, freeze_at=S1, baselines=False, hidden_judging="final",
          final_picks=3, signup="approval", team_size=7)  # fmt: skip
    f.set("teams", {"id": red}, invite_hash="e" * 64)
    f.set("users", {"id": f.ids("users")[2]}, pending=True, locked_at=S1)
    f.set("api_tokens", {"id": f.ids("api_tokens")[0]}, expires_at=S2, last_used_at=S1)
    f.set("problem_versions", {"id": version}, statement=TEXT, package_blob="b" * 64,
          time_limit_s=0.1 + 2**-40)  # fmt: skip
    f.add("cases", version_id=version, name=TEXT, split="public", weight=1 / 3,
          capacity=BIG, lower_bound=BIG - 1, items=2**31 - 1)  # fmt: skip
    f.set("submissions", {"id": sub}, final_pick=True, status_detail=TEXT)
    f.set("judgings", {"id": judging}, started_at=S1, heartbeat_at=S2, split="public",
          build_blob="c" * 64, reason=TEXT)  # fmt: skip
    f.add("case_results", judging_id=judging, case="big", split="public", peak=BIG,
          lower_bound=BIG - 7, memory_mb=1.5, plan_digest="d" * 64, makespan_us=1e300,
          request_us_mean=0.25, request_us_p99=2.0**-1074, message=TEXT)  # fmt: skip
    f.add("audit_log", at=S1, actor_id=alice, action="upgrade", target=TEXT,
          detail={"note": TEXT, "n": BIG, "list": [1, None, True, 0.5]},
          contest_id=1)  # fmt: skip
    f.add("web_sessions", session_hash="f" * 64, user_id=alice, created_at=S1, expires_at=S2,
          ended_at=S2)  # fmt: skip
    f.add("login_throttle", key=f"user:{TEXT}", failures=2**31 - 1, last_failure_at=S1,
          locked_until=S2)  # fmt: skip
    f.add("import_jobs", actor_id=alice, filename=f"{TEXT}.zip", sha256="a" * 64, status="done",
          detail=TEXT, version_id=version, created_at=S1, started_at=S1,
          finished_at=S2)  # fmt: skip
    f.add("workers", name=f"celery@{TEXT}", host="h", pid=2**31 - 1, gpu_slot=3,
          sandbox="docker", version="1", state="busy", current_task="judge",
          current_judging_id=judging, started_at=S1, last_seen=S2, stopped_at=S2)  # fmt: skip
    f.set("board_state", {"id": 1}, version=BIG)  # its one row, made by 0005
    _blob(f)
    submissions = (w for w in f.written if w[0] == "submissions")
    baseline = [k["id"] for _, k, v in submissions if v["team_id"] == team.get(BASELINES_TEAM)]
    if baseline:
        f.add("baselines", version_id=version, name="greedy", submission_id=baseline[0],
              created_at=S1)  # fmt: skip
    f.add("news", text=TEXT, at=S1)
    f.add("case_runs", judging_id=judging, attempt=2, case="big", worker="w2", status="done",
          takeovers=4, started_at=S1, heartbeat_at=S2)  # fmt: skip
    if f.has("messages"):
        message = {"id": f.ids("messages")[0]}
        f.set("messages", message, contest_id=1, answer=TEXT, answered_by=f.ids("users")[0],
              answered_at=S2)  # fmt: skip


def _blob(f: Filler) -> None:
    """A blob of two chunks (the database store's rows), bytes 0..255 and NULs."""
    sha = hashlib.sha256(BYTES * 2).hexdigest()
    f.add("blobs", sha256=sha, size=len(BYTES) * 2, created_at=S1)
    for seq in (0, 1):
        f.add("blob_chunks", sha256=sha, seq=seq, data=BYTES)


def _unwritten(f: Filler) -> list[str]:
    """The columns of this revision that no row written holds a value in."""
    written: dict[str, set[str]] = {}
    for table, _, values in f.written:
        written.setdefault(table, set()).update(values)
    return [
        f"{name}.{column.name}"
        for name, table in f.tables.items()
        for column in table.c
        if column.name not in written.get(name, set())
    ]


def _upgrade_from(revision: str, url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    command.upgrade(alembic_config(url), revision)
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            filler = Filler(conn)
            team = fill(filler, with_contest=True)
            _every_column(filler, team)
        assert _unwritten(filler) == []  # a new column needs a value above
        migrate(url)  # as the service does at start
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT version_num FROM alembic_version")).all() == [
                (HEAD,)
            ]
            assert changed_rows(conn, filler.written) == []
            check_contest_one(conn, team)
        print(f"{revision}: {len(filler.written)} rows in {len(filler.tables)} tables kept")
    finally:
        engine.dispose()
    check_service(url, tmp_path / "data", monkeypatch)


@contextmanager
def _database(backend: str, data: Path) -> Iterator[str]:
    """An empty database: SQLite in the data directory (as the embedded service keeps
    it), or PostgreSQL (one per case, dropped afterwards)."""
    if backend == "sqlite":
        data.mkdir(parents=True, exist_ok=True)
        yield f"sqlite:///{data}/db.sqlite"
        return
    with postgres_database(prefix="upgrade_") as url:
        yield url


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("revision", EARLIER)
def test_an_upgrade_keeps_every_row(revision, backend, tmp_path, monkeypatch):
    with _database(backend, tmp_path / "data") as url:
        _upgrade_from(revision, url, tmp_path, monkeypatch)


def test_every_earlier_revision_is_tried():
    """The list follows the migrations folder: a new head makes the old one a case."""
    assert EARLIER[0] == "0001" and len(EARLIER) == len(list(SCRIPTS.walk_revisions())) - 1


# --- a data directory from before the blob store (0006) -----------------------------------
# Until 0006 the data directory held each upload at artifacts/<ab>/<sha256><suffix>, each
# plan at plans/<ab>/<sha256>, and each problem version's package unpacked at
# problems/<slug>/v<n>/<slug>, named by problem_versions.package_path. 0006 moves no
# file: the code reads them where they are (worker.judging.submission_file, the blob
# stores' legacy folder in api.blobs, api.blobs.packages.package_root), on either store
# (PostgreSQL's default is the database store).
UPLOAD = b"def plan(case):\n    return []  # \xc3\xa9\n"
PLAN = b"0,0\n" * 3 + BYTES


def _old_data_dir(data: Path, package: Path, f: Filler) -> dict[str, str]:
    """The files and rows of an installation at 0005: one problem version (its package
    in the data directory), one judged submission with a stored plan."""
    copy = data / "problems" / package.name / "v1" / package.name
    shutil.copytree(package, copy)
    loaded = load_problem(copy)
    sha, digest = hashlib.sha256(UPLOAD).hexdigest(), hashlib.sha256(PLAN).hexdigest()
    for path, data_bytes in (
        (data / "artifacts" / sha[:2] / f"{sha}.py", UPLOAD),
        (data / "plans" / digest[:2] / digest, PLAN),
    ):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data_bytes)
    team = f.add("teams", name="red")
    user = f.add("users", username="alice", team_id=team, is_admin=False)
    f.add(
        "api_tokens", user_id=user, token_hash=hashlib.sha256(TOKENS["alice"].encode()).hexdigest()
    )
    problem = f.add("problems", slug=loaded.slug, created_at=T0)
    old = {"package_path": str(copy), "sha256": package_digest(copy)}
    version = f.add(
        "problem_versions", problem_id=problem, number=1, name=loaded.name, type=loaded.type, **old
    )
    for case in loaded.cases:
        f.add("cases", version_id=version, name=case.name, split=case.split,
              capacity=case.capacity)  # fmt: skip
    f.set("problems", {"id": problem}, current_version_id=version)
    sub = f.add("submissions", team_id=team, user_id=user, version_id=version, sha256=sha,
                size=len(UPLOAD), created_at=T0)  # fmt: skip
    judging = f.add("judgings", submission_id=sub)
    public = next(c.name for c in loaded.cases if c.split == "public")
    f.add("case_results", judging_id=judging, case=public, split="public", plan_digest=digest)
    return {"slug": loaded.slug, "case": public, "sha": sha, "digest": digest,
            "case_file": str(next(c.path for c in loaded.cases if c.name == public))}  # fmt: skip


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_data_dir_from_before_the_blob_store_is_still_read(backend, tmp_path, monkeypatch):
    data, package = tmp_path / "data", make_package(tmp_path)
    with _database(backend, data) as url:
        command.upgrade(alembic_config(url), "0005")
        engine = sa.create_engine(url)
        with engine.begin() as conn:
            filler = Filler(conn)
            old = _old_data_dir(data, package, filler)
        engine.dispose()
        monkeypatch.setenv("MEMORACE_DATA_DIR", str(data))
        monkeypatch.setenv("MEMORACE_DATABASE_URL", url)
        get_settings.cache_clear()
        try:
            _check_old_files(old, tmp_path)
            with engine.connect() as conn:
                assert changed_rows(conn, filler.written) == []
        finally:
            engine.dispose()
            get_settings.cache_clear()


def _check_old_files(old: dict[str, str], tmp_path: Path) -> None:
    """Through the service's code (create_app migrates, as at start): the package's
    public case is served, the stored plan found (pictures, rescores), the upload read
    (a worker judging it again)."""
    from api.app import create_app

    alice = {"Authorization": f"Bearer {TOKENS['alice']}"}
    with TestClient(create_app()) as client:
        case = client.get(f"/api/v1/problems/{old['slug']}/cases/{old['case']}", headers=alice)
        assert case.status_code == 200, case.text
        assert case.content == Path(old["case_file"]).read_bytes()
    settings = get_settings()
    plan = plan_file(settings, old["digest"])
    assert plan is not None and plan.read_bytes() == PLAN
    (tmp_path / "judging").mkdir()
    upload = submission_file(settings, old["sha"], "p.py", tmp_path / "judging")
    assert upload.read_bytes() == UPLOAD
