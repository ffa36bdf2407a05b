"""Final judging (api.actions.finals): when hidden cases run, a team's picks, what a judging runs

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-05
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("contest") as batch:
        batch.add_column(
            sa.Column("hidden_judging", sa.String(16), nullable=False, server_default="submission")
        )
        batch.add_column(sa.Column("final_picks", sa.Integer(), nullable=False, server_default="1"))
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(
            sa.Column("final_pick", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    with op.batch_alter_table("judgings") as batch:
        batch.add_column(sa.Column("split", sa.String(8), nullable=False, server_default="all"))


def downgrade() -> None:
    with op.batch_alter_table("judgings") as batch:
        batch.drop_column("split")
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("final_pick")
    with op.batch_alter_table("contest") as batch:
        batch.drop_column("final_picks")
        batch.drop_column("hidden_judging")
