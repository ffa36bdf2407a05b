"""Integrity: token expiry, server-side web sessions, login throttling, the hidden-case
detail setting, background package imports

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

Stamp = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch:
        batch.add_column(sa.Column("expires_at", Stamp, nullable=True))
        batch.add_column(sa.Column("last_used_at", Stamp, nullable=True))
    with op.batch_alter_table("contest") as batch:
        batch.add_column(
            sa.Column("hidden_detail", sa.String(16), nullable=False, server_default="verdict")
        )
    op.create_table(
        "web_sessions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_hash", sa.String(64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("created_at", Stamp, nullable=False),
        sa.Column("expires_at", Stamp, nullable=False),
        sa.Column("ended_at", Stamp, nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name="fk_web_sessions_user_id_users"),
        sa.PrimaryKeyConstraint("id", name="pk_web_sessions"),
        sa.UniqueConstraint("session_hash", name="uq_web_sessions_session_hash"),
    )
    op.create_index("ix_web_sessions_user_id", "web_sessions", ["user_id"])
    op.create_table(
        "login_throttle",
        sa.Column("key", sa.String(200), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("last_failure_at", Stamp, nullable=True),
        sa.Column("locked_until", Stamp, nullable=True),
        sa.PrimaryKeyConstraint("key", name="pk_login_throttle"),
    )
    op.create_table(
        "import_jobs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("actor_id", sa.Integer(), nullable=True),
        sa.Column("filename", sa.String(200), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=True),
        sa.Column("created_at", Stamp, nullable=False),
        sa.Column("finished_at", Stamp, nullable=True),
        sa.ForeignKeyConstraint(["actor_id"], ["users.id"], name="fk_import_jobs_actor_id_users"),
        sa.PrimaryKeyConstraint("id", name="pk_import_jobs"),
    )
    op.create_index("ix_import_jobs_status", "import_jobs", ["status"])


def downgrade() -> None:
    op.drop_index("ix_import_jobs_status", table_name="import_jobs")
    op.drop_table("import_jobs")
    op.drop_table("login_throttle")
    op.drop_index("ix_web_sessions_user_id", table_name="web_sessions")
    op.drop_table("web_sessions")
    with op.batch_alter_table("contest") as batch:
        batch.drop_column("hidden_detail")
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_column("last_used_at")
        batch.drop_column("expires_at")
