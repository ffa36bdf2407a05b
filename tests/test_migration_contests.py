"""Migration 0014 (contests) on a database with data in it, on SQLite and PostgreSQL:
from the 0013 schema, filled with plain SQL (the ORM models describe the new schema),
with and without the contest row that the old code made lazily. Every submission,
judging, case result and token survives and belongs to the first contest (id 1, 'main',
current); the teams are registered in it, the problems are in it; the service still
authenticates the old tokens and lists the old submissions; a downgrade keeps the rows.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from fastapi.testclient import TestClient

from api import contests, queue
from api.auth import TOKEN_PREFIX
from api.db.session import MIGRATIONS, migrate, session_scope
from api.settings import get_settings
from tests.service import postgres_database

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
TOKENS = {
    "alice": TOKEN_PREFIX + "old-token-of-alice",
    "bob": TOKEN_PREFIX + "old-token-of-bob",
    "admin": TOKEN_PREFIX + "old-token-of-admin",
}
KEPT = {  # table: the columns that must come through unchanged
    "submissions": "id, team_id, user_id, version_id, sha256, status, public_score, "
    "current_judging_id",
    "judgings": "id, submission_id, kind, status, public_score, hidden_score",
    "case_results": 'id, judging_id, "case", verdict, peak, score',
    "api_tokens": "id, user_id, token_hash, revoked",
    "audit_log": "id, actor_id, action, target",
    "messages": "id, contest_id, team_id, text",
}


def _config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url)
    return config


# The columns every row of a table has alike (the rest are given per row).
FIXED: dict[str, dict[str, object]] = {
    "teams": {"disqualified": False, "created_at": T0},
    "users": {"password_hash": "$argon2id$x", "created_at": T0},
    "api_tokens": {"name": "cli", "revoked": False, "created_at": T0},
    "problem_versions": {"type": "offset", "statement": "#", "time_limit_s": 10.0,
                         "created_at": T0},
    "cases": {"weight": 1.0, "capacity": 1 << 20, "lower_bound": 1000, "items": 8},
    "submissions": {"filename": "p.py", "language": "python", "status": "done",
                    "status_detail": "judged", "disqualified": False, "hidden_score": 0.4},
    "judgings": {"kind": "judge", "status": "final", "reason": "", "priority": 0, "attempt": 1,
                 "worker": "w1", "sandbox": "local", "build_error": "", "hidden_score": 0.4,
                 "enqueued_at": T0, "finished_at": T0, "created_at": T0},
    "case_results": {"weight": 1.0, "verdict": "ok", "message": "", "lower_bound": 1000,
                     "score": 0.5, "time_s": 0.1, "log": "", "created_at": T0},
}  # fmt: skip


def _typed(name: str, value: object) -> sa.ColumnClause:
    kind = {datetime: sa.DateTime(timezone=True), bool: sa.Boolean(), dict: sa.JSON()}
    return sa.column(name, kind.get(type(value)))


def _add(conn: sa.Connection, table: str, **given: object) -> int:
    """One row by plain SQL (FIXED's columns and `given`); its id."""
    values = {**FIXED.get(table, {}), **given}
    t = sa.table(table, sa.column("id"), *(_typed(k, v) for k, v in values.items() if k != "id"))
    return conn.execute(sa.insert(t).values(**values).returning(t.c.id)).scalar_one()


def _set(conn: sa.Connection, sql: str, **params: object) -> None:
    conn.execute(sa.text(sql), params)


def _rows(conn: sa.Connection, table: str) -> list[tuple]:
    query = sa.text(f"SELECT {KEPT[table]} FROM {table} ORDER BY id")
    return [tuple(r) for r in conn.execute(query)]


def _fill(conn: sa.Connection, with_contest: bool) -> dict[str, int]:
    """Today's installation: two teams and the baselines' team, an organizer, problems
    with versions and cases, judged submissions, tokens, audit entries, a message."""
    if with_contest:  # as api.admin.contest made it: id 1, then the organizers' settings
        end = T0 + timedelta(days=2)
        _add(conn, "contest", id=1, title="Winter race", start_at=T0, end_at=end,
             hidden_revealed=True, hidden_detail="judged")  # fmt: skip
    teams = (("red", False), ("blue", False), ("memorace baselines", True))
    team = {name: _add(conn, "teams", name=name, system=system) for name, system in teams}
    users = (("admin", None), ("alice", "red"), ("bob", "blue"), ("bot", "memorace baselines"))
    user = {name: _add(conn, "users", username=name, team_id=team.get(t), is_admin=t is None)
            for name, t in users}  # fmt: skip
    for name, token in TOKENS.items():
        digest = hashlib.sha256(token.encode()).hexdigest()
        _add(conn, "api_tokens", user_id=user[name], token_hash=digest)
    versions = []
    for slug in ("tiny", "small"):
        problem = _add(conn, "problems", slug=slug, created_at=T0)
        for number in (1, 2):
            package = {"package_path": f"pkg/{slug}/{number}", "sha256": f"{number:064x}"}
            version = _add(
                conn, "problem_versions", problem_id=problem, number=number, name=slug, **package
            )
            for case, split in (("a", "public"), ("b", "hidden")):
                _add(conn, "cases", version_id=version, name=case, split=split)
        _set(
            conn, "UPDATE problems SET current_version_id = :v WHERE id = :p", v=version, p=problem
        )
        versions.append(version)
    made = (("alice", "red"), ("alice", "red"), ("bob", "blue"), ("bot", "memorace baselines"))
    for n, (who, t) in enumerate(made):
        score = 0.5 + n / 10
        sub = _add(conn, "submissions", team_id=team[t], user_id=user[who], size=100 + n,
                   version_id=versions[n % 2], sha256=f"{n + 10:064x}", public_score=score,
                   created_at=T0 + timedelta(hours=n))  # fmt: skip
        judging = _add(conn, "judgings", submission_id=sub, public_score=score)
        _set(conn, "UPDATE submissions SET current_judging_id = :j WHERE id = :s", j=judging, s=sub)
        for case, split in (("a", "public"), ("b", "hidden")):
            _add(conn, "case_results", judging_id=judging, case=case, split=split, peak=2000 + n)
    _add(conn, "audit_log", at=T0, actor_id=user["admin"], action="contest.update",
         target="contest", detail={"end_at": "2026-12-03"})  # fmt: skip
    _add(conn, "audit_log", at=T0, action="login.failed", target="mallory", detail={})
    _add(conn, "messages", kind="clarification", team_id=team["red"], author_id=user["alice"],
         problem="tiny", text="Is the capacity in bytes?", answer="", audience="team",
         created_at=T0)  # fmt: skip
    return team


def _check_contest_one(conn: sa.Connection, team: dict[str, int], with_contest: bool) -> None:
    def q(sql: str) -> list:
        return conn.execute(sa.text(sql)).all()

    (contest,) = q(
        "SELECT slug, is_current, title, hidden_revealed, hidden_detail, end_at "
        "FROM contest WHERE id = 1"
    )
    assert (contest.slug, bool(contest.is_current)) == ("main", True)
    if with_contest:
        kept = (contest.title, bool(contest.hidden_revealed), contest.hidden_detail)
        assert kept == ("Winter race", True, "judged")
        assert contest.end_at is not None
    else:
        assert (contest.title, bool(contest.hidden_revealed)) == ("MemoRace", False)
    # Every contestant's submission is the first contest's; a baseline's is every
    # contest's (None, as new baselines are).
    by_team = "SELECT DISTINCT contest_id FROM submissions WHERE team_id {} :system"
    system = team["memorace baselines"]
    assert conn.execute(sa.text(by_team.format("<>")), {"system": system}).all() == [(1,)]
    assert conn.execute(sa.text(by_team.format("=")), {"system": system}).all() == [(None,)]
    problems = q("SELECT id FROM problems ORDER BY id")
    in_one = "SELECT problem_id FROM contest_problems WHERE contest_id = 1 AND version_id IS NULL"
    assert q(in_one + " ORDER BY problem_id") == problems
    assert q("SELECT count(*) FROM contest_problems") == [(len(problems),)]
    registered = q(
        "SELECT team_id, status FROM registrations WHERE contest_id = 1 ORDER BY team_id"
    )
    assert registered == [(team["red"], "approved"), (team["blue"], "approved")]
    assert q("SELECT count(*) FROM registrations") == [(2,)]  # not the baselines' team
    assert q("SELECT count(*) FROM audit_log WHERE contest_id IS NULL") == [(0,)]  # all 1


def _check_service(url: str, tmp_path, monkeypatch) -> None:
    """The migrated database behind the API: old tokens, old submissions, a new contest."""
    monkeypatch.setenv("MEMORACE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MEMORACE_DATABASE_URL", url)
    get_settings.cache_clear()
    queue.producer.cache_clear()
    from api.app import create_app

    try:
        with TestClient(create_app()) as client:
            for name in ("alice", "admin"):
                me = client.get("/api/v1/me", headers={"Authorization": f"Bearer {TOKENS[name]}"})
                assert me.status_code == 200, me.text
                assert me.json()["username"] == name
            alice = {"Authorization": f"Bearer {TOKENS['alice']}"}
            listed = client.get("/api/v1/submissions", headers=alice)
            assert listed.status_code == 200, listed.text
            with session_scope(url) as db:
                red = "SELECT s.id FROM submissions s JOIN teams t ON t.id = s.team_id "
                mine = db.execute(sa.text(red + "WHERE t.name = 'red'")).scalars()
                assert sorted(s["id"] for s in listed.json()) == sorted(mine)
                assert {s["contest"] for s in listed.json()} == {"main"}
                second = contests.create(db, "spring", "Spring race")  # the id sequence too
                assert second.id > 1
    finally:
        get_settings.cache_clear()
        queue.producer.cache_clear()


@pytest.mark.parametrize("with_contest", [True, False], ids=["contest-row", "no-contest-row"])
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_contests_migration_keeps_every_row(backend, with_contest, tmp_path, monkeypatch):
    def run(url: str) -> None:
        command.upgrade(_config(url), "0013")
        engine = sa.create_engine(url)
        try:
            with engine.begin() as conn:
                team = _fill(conn, with_contest)
            with engine.connect() as conn:
                before = {table: _rows(conn, table) for table in KEPT}
            migrate(url)
            with engine.connect() as conn:
                assert {table: _rows(conn, table) for table in KEPT} == before
                _check_contest_one(conn, team, with_contest)
            engine.dispose()
            command.downgrade(_config(url), "0013")
            with engine.connect() as conn:
                assert {table: _rows(conn, table) for table in KEPT} == before
                assert conn.execute(sa.text("SELECT count(*) FROM contest")).scalar() == 1
            engine.dispose()
            migrate(url)  # and up again, for the service
            _check_service(url, tmp_path, monkeypatch)
        finally:
            engine.dispose()

    if backend == "sqlite":
        run(f"sqlite:///{tmp_path}/db.sqlite")
        return
    with postgres_database() as url:
        run(url)


def test_a_fresh_postgresql_database_makes_a_second_contest():
    """The migration inserts contest 1 with its id: the id sequence must follow it."""
    with postgres_database() as url:
        migrate(url)
        with session_scope(url) as db:
            assert contests.create(db, "spring", "Spring race").id == 2
