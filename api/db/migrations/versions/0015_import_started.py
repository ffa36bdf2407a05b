"""import jobs: when a worker took the job, so that the reaper can re-send one whose
worker died (or that a restore brought back as running) once its time limit is long past

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-07
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("import_jobs") as table:
        table.add_column(sa.Column("started_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("import_jobs") as table:
        table.drop_column("started_at")
