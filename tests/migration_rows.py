"""Rows written by plain SQL into a database at any earlier Alembic revision, and the
checks that they came through an upgrade (tests/test_migration_contests.py,
tests/test_migration_upgrades.py).

The ORM models describe the newest schema, so the rows are written through the tables
as the database holds them now (reflected): a column that does not exist yet at that
revision is left out, as the release of that time never wrote it. Every row written
is remembered, to be read back after the upgrade and compared value by value.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.config import Config
from fastapi.testclient import TestClient

from api import queue
from api.access.auth import TOKEN_PREFIX
from api.actions import contests
from api.db.session import MIGRATIONS, session_scope
from api.settings import get_settings

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
TOKENS = {
    "alice": TOKEN_PREFIX + "old-token-of-alice",
    "bob": TOKEN_PREFIX + "old-token-of-bob",
    "admin": TOKEN_PREFIX + "old-token-of-admin",
}
BASELINES_TEAM = "memorace baselines"

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


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url)
    return config


@dataclass
class Filler:
    """Writes rows into the tables the database has now (its revision's), keeping only
    the columns that exist; remembers each row (its key and the values written)."""

    conn: sa.Connection
    tables: dict[str, sa.Table] = field(default_factory=dict)
    written: list[tuple[str, dict[str, Any], dict[str, Any]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        meta = sa.MetaData()
        for name in sa.inspect(self.conn).get_table_names():
            if name != "alembic_version":
                self.tables[name] = sa.Table(name, meta, autoload_with=self.conn)

    def has(self, table: str, column: str | None = None) -> bool:
        t = self.tables.get(table)
        return t is not None and (column is None or column in t.c)

    def add(self, table: str, **given: object) -> Any:
        """One row (FIXED's columns and `given`, those that exist); its id (or None
        when the table does not exist yet)."""
        if not self.has(table):
            return None
        t = self.tables[table]
        values = {k: v for k, v in {**FIXED.get(table, {}), **given}.items() if k in t.c}
        key_cols = list(t.primary_key.columns)
        key = self.conn.execute(sa.insert(t).values(**values).returning(*key_cols)).one()
        keys = dict(zip((c.name for c in key_cols), key, strict=True))
        self.written.append((table, keys, {**values, **keys}))
        return key[0]

    def ids(self, table: str) -> list[Any]:
        """The ids of the rows written into `table`, in order."""
        return [keys["id"] for name, keys, _ in self.written if name == table]

    def set(self, table: str, key: dict[str, Any], **changes: object) -> None:
        """An UPDATE of a row (by its key), remembered as the row's values from now on;
        nothing when the table does not exist yet."""
        if not self.has(table):
            return
        t = self.tables[table]
        changes = {k: v for k, v in changes.items() if k in t.c}
        if not changes:  # none of these columns exists yet
            return
        where = [t.c[k] == v for k, v in key.items()]
        self.conn.execute(sa.update(t).where(*where).values(**changes))
        for _, keys, values in (w for w in self.written if w[0] == table):
            if keys == key:
                values.update(changes)
                return
        self.written.append((table, dict(key), {**key, **changes}))


def same(value: object) -> object:
    """A value as both backends give it back: SQLite's stamps come back naive (UTC)."""
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return value


def changed_rows(conn: sa.Connection, written: list[tuple[str, dict, dict]]) -> list[str]:
    """Each written row that is gone or holds another value in a column written."""
    meta, wrong = sa.MetaData(), []
    for table, keys, values in written:
        t = meta.tables.get(table)
        if t is None:
            t = sa.Table(table, meta, autoload_with=conn)
        query = sa.select(*(t.c[k] for k in values)).where(*(t.c[k] == v for k, v in keys.items()))
        found = conn.execute(query).mappings().all()
        if len(found) != 1:
            wrong.append(f"{table} {keys}: {len(found)} rows")
            continue
        for column, value in values.items():
            if same(found[0][column]) != same(value):
                wrong.append(f"{table} {keys} {column}: {found[0][column]!r} != {value!r}")
    return wrong


def fill(f: Filler, with_contest: bool) -> dict[str, int]:
    """An installation as the release of the database's revision left it: two teams (and
    the baselines' team, from 0007 on), an organizer, problems with versions and cases,
    judged submissions, tokens, audit entries, a message (from 0012 on). Returns the
    teams' ids by name."""
    if with_contest:  # as api.actions.admin.contest made it: id 1, then the organizers' settings
        end = T0 + timedelta(days=2)
        settings = {"title": "Winter race", "start_at": T0, "end_at": end,
                    "hidden_revealed": True, "hidden_detail": "judged"}  # fmt: skip
        if f.has("contest", "slug"):  # from 0014 on its migration made the row
            f.set("contest", {"id": 1}, slug="main", is_current=True, **settings)
        else:
            f.add("contest", id=1, **settings)
    teams = [("red", False), ("blue", False)]
    if f.has("teams", "system"):  # the baselines came with 0007
        teams.append((BASELINES_TEAM, True))
    team = {name: f.add("teams", name=name, system=system) for name, system in teams}
    users = [("admin", None), ("alice", "red"), ("bob", "blue")]
    users += [("bot", BASELINES_TEAM)] if BASELINES_TEAM in team else []
    user = {name: f.add("users", username=name, team_id=team.get(t), is_admin=t is None)
            for name, t in users}  # fmt: skip
    for name, token in TOKENS.items():
        digest = hashlib.sha256(token.encode()).hexdigest()
        f.add("api_tokens", user_id=user[name], token_hash=digest)
    versions = _problems(f)
    made = [("alice", "red"), ("alice", "red"), ("bob", "blue"), ("bot", BASELINES_TEAM)]
    for n, (who, t) in enumerate(m for m in made if m[1] in team):
        score = 0.5 + n / 10
        sub = f.add("submissions", team_id=team[t], user_id=user[who], size=100 + n,
                    version_id=versions[n % 2], sha256=f"{n + 10:064x}", public_score=score,
                    created_at=T0 + timedelta(hours=n),
                    contest_id=None if t == BASELINES_TEAM else 1)  # fmt: skip
        judging = f.add("judgings", submission_id=sub, public_score=score)
        f.set("submissions", {"id": sub}, current_judging_id=judging)
        for case, split in (("a", "public"), ("b", "hidden")):
            f.add("case_results", judging_id=judging, case=case, split=split, peak=2000 + n)
    f.add("audit_log", at=T0, actor_id=user["admin"], action="contest.update",
          target="contest", detail={"end_at": "2026-12-03"}, contest_id=1)  # fmt: skip
    f.add("audit_log", at=T0, action="login.failed", target="mallory", detail={}, contest_id=1)
    _contest_rows(f, team)
    f.add("messages", kind="clarification", team_id=team["red"], author_id=user["alice"],
          problem="tiny", text="Is the capacity in bytes?", answer="", audience="team",
          created_at=T0)  # fmt: skip
    return team


def _contest_rows(f: Filler, team: dict[str, int]) -> None:
    """From 0014 on, what a release at that revision keeps of contest 1: every problem
    (at its current version: NULL) and every contestant team, approved."""
    for position, problem in enumerate(f.ids("problems")):
        f.add("contest_problems", contest_id=1, problem_id=problem, version_id=None,
              position=position)  # fmt: skip
    for name in ("red", "blue"):
        f.add("registrations", contest_id=1, team_id=team[name], status="approved",
              created_at=T0)  # fmt: skip


def _problems(f: Filler) -> list[int]:
    """Problems tiny and small, two versions each with a public and a hidden case; the
    current version of each, in order."""
    versions = []
    for slug in ("tiny", "small"):
        problem = f.add("problems", slug=slug, created_at=T0)
        for number in (1, 2):
            package = {"package_path": f"pkg/{slug}/{number}", "sha256": f"{number:064x}"}
            version = f.add(
                "problem_versions", problem_id=problem, number=number, name=slug, **package
            )
            for case, split in (("a", "public"), ("b", "hidden")):
                f.add("cases", version_id=version, name=case, split=split)
        f.set("problems", {"id": problem}, current_version_id=version)
        versions.append(version)
    return versions


def check_contest_one(conn: sa.Connection, team: dict[str, int]) -> None:
    """What 0014 makes of an installation: contest 1 ('main', current) holds every
    problem, every contestant team, every contestant's submission and audit entry."""

    def q(sql: str) -> list:
        return conn.execute(sa.text(sql)).all()

    (contest,) = q("SELECT slug, is_current FROM contest WHERE id = 1")
    assert (contest.slug, bool(contest.is_current)) == ("main", True)
    # Every contestant's submission is the first contest's; a baseline's is every
    # contest's (None, as new baselines are).
    system = team.get(BASELINES_TEAM, -1)
    by_team = "SELECT DISTINCT contest_id FROM submissions WHERE team_id {} :system"
    assert conn.execute(sa.text(by_team.format("<>")), {"system": system}).all() == [(1,)]
    if BASELINES_TEAM in team:
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


def check_service(url: str, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The migrated database behind the API: old tokens, old submissions, a new contest."""
    monkeypatch.setenv("MEMORACE_DATA_DIR", str(data_dir))
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
