"""case_results.makespan_us: the simulated makespan of timed problem types (offload)

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("case_results") as batch:
        batch.add_column(sa.Column("makespan_us", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("case_results") as batch:
        batch.drop_column("makespan_us")
