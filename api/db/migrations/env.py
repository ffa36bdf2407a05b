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
    engine = create_engine(url)
    with engine.connect() as connection:
        # batch mode: SQLite cannot ALTER most things in place
        context.configure(
            connection=connection,
            target_metadata=Base.metadata,
            render_as_batch=connection.dialect.name == "sqlite",
        )
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


run()
