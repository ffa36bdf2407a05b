"""Migration 0014 (contests) on a database with data in it, on SQLite and PostgreSQL:
from the 0013 schema, filled with plain SQL (the ORM models describe the new schema),
with and without the contest row that the old code made lazily. Every submission,
judging, case result and token survives and belongs to the first contest (id 1, 'main',
current); the teams are registered in it, the problems are in it; the service still
authenticates the old tokens and lists the old submissions; a downgrade keeps the rows.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from alembic import command

from api.actions import contests
from api.db.session import migrate, session_scope
from tests.migration_rows import (
    Filler,
    alembic_config,
    changed_rows,
    check_contest_one,
    check_service,
    fill,
)
from tests.service import postgres_database


def _check_contest_settings(conn: sa.Connection, with_contest: bool) -> None:
    """The old contest row keeps the organizers' settings; without one, 0014 makes it."""
    (contest,) = conn.execute(
        sa.text("SELECT title, hidden_revealed, hidden_detail, end_at FROM contest WHERE id = 1")
    ).all()
    if with_contest:
        kept = (contest.title, bool(contest.hidden_revealed), contest.hidden_detail)
        assert kept == ("Winter race", True, "judged")
        assert contest.end_at is not None
    else:
        assert (contest.title, bool(contest.hidden_revealed)) == ("MemoRace", False)


@pytest.mark.parametrize("with_contest", [True, False], ids=["contest-row", "no-contest-row"])
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_contests_migration_keeps_every_row(backend, with_contest, tmp_path, monkeypatch):
    def run(url: str) -> None:
        command.upgrade(alembic_config(url), "0013")
        engine = sa.create_engine(url)
        try:
            with engine.begin() as conn:
                filler = Filler(conn)
                team = fill(filler, with_contest)
            migrate(url)
            with engine.connect() as conn:
                assert changed_rows(conn, filler.written) == []
                check_contest_one(conn, team)
                _check_contest_settings(conn, with_contest)
            engine.dispose()
            command.downgrade(alembic_config(url), "0013")
            with engine.connect() as conn:
                assert changed_rows(conn, filler.written) == []
                assert conn.execute(sa.text("SELECT count(*) FROM contest")).scalar() == 1
            engine.dispose()
            migrate(url)  # and up again, for the service
            check_service(url, tmp_path / "data", monkeypatch)
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
