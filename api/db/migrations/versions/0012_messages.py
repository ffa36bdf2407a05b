"""messages: clarifications (a team asks, the jury answers it or everyone) and
announcements

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "messages",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("contest_id", sa.Integer(), nullable=False, server_default="1"),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("team_id", sa.Integer(), sa.ForeignKey("teams.id"), nullable=True),
        sa.Column("author_id", sa.Integer(), sa.ForeignKey("users.id"), nullable=True),
        sa.Column("problem", sa.String(64), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("answer", sa.Text(), nullable=False),
        sa.Column("audience", sa.String(8), nullable=False),
        sa.Column("answered_by", sa.Integer(), sa.ForeignKey("users.id"), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("answered_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_messages_contest_id", "messages", ["contest_id"])
    op.create_index("ix_messages_team_id", "messages", ["team_id"])


def downgrade() -> None:
    op.drop_index("ix_messages_team_id", "messages")
    op.drop_index("ix_messages_contest_id", "messages")
    op.drop_table("messages")
