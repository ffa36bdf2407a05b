"""Board state: the leaderboards' change counter (one row)

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    table = op.create_table(
        "board_state",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_board_state"),
    )
    op.bulk_insert(table, [{"id": 1, "version": 0}])


def downgrade() -> None:
    op.drop_table("board_state")
