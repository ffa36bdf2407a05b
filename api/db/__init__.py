"""The database: SQLAlchemy models (models), sessions and migrations (session, the
Alembic scripts in migrations/) and the boards' change counters (board). The lowest
layer of the service: it imports nothing else of api."""
