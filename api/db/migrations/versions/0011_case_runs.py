"""case_runs: which worker runs which case of a judging (cases judged side by side),
and judgings.build_blob: the judging's build in the blob store, for helpers on other hosts

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "case_runs",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("judging_id", sa.Integer(), sa.ForeignKey("judgings.id"), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("case", sa.String(100), nullable=False),
        sa.Column("worker", sa.String(200), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("takeovers", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint("judging_id", "attempt", "case", name="uq_case_runs_claim"),
    )
    op.create_index("ix_case_runs_judging_id", "case_runs", ["judging_id"])
    with op.batch_alter_table("judgings") as batch:
        batch.add_column(sa.Column("build_blob", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("judgings") as batch:
        batch.drop_column("build_blob")
    op.drop_index("ix_case_runs_judging_id", "case_runs")
    op.drop_table("case_runs")
