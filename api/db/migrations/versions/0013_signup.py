"""sign-up: a contest's sign-up mode and team size; pending and locked accounts; team
invitation codes

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("contest") as table:
        mode = sa.Column("signup", sa.String(16), nullable=False, server_default="closed")
        table.add_column(mode)
        table.add_column(sa.Column("team_size", sa.Integer(), nullable=False, server_default="4"))
    with op.batch_alter_table("users") as table:
        pending = sa.Column("pending", sa.Boolean(), nullable=False, server_default=sa.false())
        table.add_column(pending)
        table.add_column(sa.Column("locked_at", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("teams") as table:
        table.add_column(sa.Column("invite_hash", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("teams") as table:
        table.drop_column("invite_hash")
    with op.batch_alter_table("users") as table:
        table.drop_column("locked_at")
        table.drop_column("pending")
    with op.batch_alter_table("contest") as table:
        table.drop_column("team_size")
        table.drop_column("signup")
