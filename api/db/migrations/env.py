"""Alembic environment: the URL comes from the caller's config (api.db.session.migrate)."""

from alembic import context
from sqlalchemy import create_engine

from api.db.models import Base


def run() -> None:
    url = context.config.get_main_option("sqlalchemy.url")
    if context.is_offline_mode():
        context.configure(url=url, target_metadata=Base.metadata, literal_binds=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    given = context.config.attributes.get("connection")  # api.db.session.migrate's, locked
    if given is not None:
        _migrate(given)
        return
    engine = create_engine(url)
    with engine.connect() as connection:
        _migrate(connection)
    engine.dispose()


def _migrate(connection) -> None:  # type: ignore[no-untyped-def]
    # batch mode: SQLite cannot ALTER most things in place
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


run()
