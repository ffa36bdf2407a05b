"""Workers: each Celery worker's presence (heartbeat, state, current task)

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

Stamp = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "workers",
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("host", sa.String(200), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("gpu_slot", sa.Integer(), nullable=True),
        sa.Column("sandbox", sa.String(20), nullable=False),
        sa.Column("version", sa.String(50), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("current_task", sa.String(100), nullable=False),
        sa.Column("current_judging_id", sa.Integer(), nullable=True),
        sa.Column("started_at", Stamp, nullable=False),
        sa.Column("last_seen", Stamp, nullable=False),
        sa.Column("stopped_at", Stamp, nullable=True),
        sa.PrimaryKeyConstraint("name", name="pk_workers"),
    )


def downgrade() -> None:
    op.drop_table("workers")
