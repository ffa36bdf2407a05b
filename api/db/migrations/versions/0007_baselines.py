"""Baselines: a system team (not a contestant) whose submissions are the reference
planners, the baselines table naming them per problem version, and the contest's
switch that shows them

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("teams") as batch:
        batch.add_column(
            sa.Column("system", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    with op.batch_alter_table("contest") as batch:
        batch.add_column(
            sa.Column("baselines", sa.Boolean(), nullable=False, server_default=sa.true())
        )
    op.create_table(
        "baselines",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=20), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["version_id"],
            ["problem_versions.id"],
            name="fk_baselines_version_id_problem_versions",
        ),
        sa.ForeignKeyConstraint(
            ["submission_id"], ["submissions.id"], name="fk_baselines_submission_id_submissions"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_baselines"),
        sa.UniqueConstraint("version_id", "name", name="uq_baselines_version_id"),
    )
    op.create_index("ix_baselines_version_id", "baselines", ["version_id"])


def downgrade() -> None:
    op.drop_index("ix_baselines_version_id", table_name="baselines")
    op.drop_table("baselines")
    with op.batch_alter_table("contest") as batch:
        batch.drop_column("baselines")
    with op.batch_alter_table("teams") as batch:
        batch.drop_column("system")
