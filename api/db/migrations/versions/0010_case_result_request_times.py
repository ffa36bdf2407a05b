"""case_results.request_us_mean/p99: an interactive type's (online) time per request, µs

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("case_results") as batch:
        batch.add_column(sa.Column("request_us_mean", sa.Float(), nullable=True))
        batch.add_column(sa.Column("request_us_p99", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("case_results") as batch:
        batch.drop_column("request_us_p99")
        batch.drop_column("request_us_mean")
