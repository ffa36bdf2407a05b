"""The schema: Alembic migrations match the models, on SQLite and on PostgreSQL, and
concurrent starts (API + N workers) migrate safely."""

from __future__ import annotations

import threading

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine

from api.db.models import Base
from api.db.session import migrate
from tests.service import postgres_database


def _diff(url: str) -> list:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return compare_metadata(MigrationContext.configure(conn), Base.metadata)
    finally:
        engine.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_migrations_build_exactly_the_models(backend, tmp_path):
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path}/db.sqlite"
        migrate(url)
        assert _diff(url) == []
        return
    with postgres_database() as url:
        migrate(url)
        assert _diff(url) == []


def test_concurrent_migrations_on_postgresql_do_not_collide():
    with postgres_database() as url:
        errors: list[BaseException] = []

        def run() -> None:
            try:
                migrate(url)
            except BaseException as exc:  # collected and asserted below
                errors.append(exc)

        threads = [threading.Thread(target=run) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert _diff(url) == []


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_every_migration_downgrades_and_upgrades_again(backend, tmp_path):
    from alembic import command
    from alembic.config import Config

    from api.db.session import MIGRATIONS

    def run(url: str) -> None:
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        config.set_main_option("sqlalchemy.url", url)
        command.upgrade(config, "head")
        command.downgrade(config, "base")
        command.upgrade(config, "head")
        assert _diff(url) == []

    if backend == "sqlite":
        run(f"sqlite:///{tmp_path}/db.sqlite")
        return
    with postgres_database() as url:
        run(url)
