"""contests: several per installation, each with its problems and registered teams;
submissions and audit entries belong to a contest. Everything already here becomes
the first contest's (id 1, slug 'main', the current one).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-07
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

STAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    _first_contest()
    _contest_ids_follow()
    with op.batch_alter_table("contest") as table:
        table.add_column(sa.Column("slug", sa.String(64), nullable=False, server_default="main"))
        current = sa.Column("is_current", sa.Boolean(), nullable=False, server_default=sa.false())
        table.add_column(current)
    op.execute("UPDATE contest SET slug = 'c' || id WHERE id <> 1")  # none today; exact anyway
    op.execute(sa.text("UPDATE contest SET is_current = :t WHERE id = 1").bindparams(t=True))
    with op.batch_alter_table("contest") as table:
        table.create_unique_constraint("uq_contest_slug", ["slug"])
    _contest_problems()
    _registrations()
    with op.batch_alter_table("submissions") as table:
        table.add_column(sa.Column("contest_id", sa.Integer(), nullable=True))
        table.create_foreign_key(
            "fk_submissions_contest_id_contest", "contest", ["contest_id"], ["id"]
        )
        table.create_index("ix_submissions_contest_id", ["contest_id"])
    # Every contestant's submission is the first contest's; a baseline's serves every
    # contest that holds its version (None, as new ones are).
    op.execute(
        sa.text(
            "UPDATE submissions SET contest_id = 1 "
            "WHERE team_id NOT IN (SELECT id FROM teams WHERE system = :t)"
        ).bindparams(t=True)
    )
    with op.batch_alter_table("audit_log") as table:
        table.add_column(sa.Column("contest_id", sa.Integer(), nullable=True))
        table.create_index("ix_audit_log_contest_id", ["contest_id"])
    op.execute("UPDATE audit_log SET contest_id = 1")  # what happened so far: the first's


def _first_contest() -> None:
    """The row the code used to make lazily (api.actions.admin.contest) is made here if missing."""
    conn = op.get_bind()
    if conn.execute(sa.text("SELECT count(*) FROM contest WHERE id = 1")).scalar():
        return
    contest = sa.table(
        "contest",
        sa.column("id", sa.Integer),
        sa.column("title", sa.String),
        sa.column("hidden_revealed", sa.Boolean),
        sa.column("hidden_detail", sa.String),
    )
    op.bulk_insert(
        contest,
        [{"id": 1, "title": "MemoRace", "hidden_revealed": False, "hidden_detail": "verdict"}],
    )


def _contest_ids_follow() -> None:
    """Contest 1 was inserted with its id (above, or by the old api.actions.admin.contest), so on
    PostgreSQL the id sequence never moved: the next contest made would take id 1 again."""
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "SELECT setval(pg_get_serial_sequence('contest', 'id'), (SELECT max(id) FROM contest))"
        )


def _contest_problems() -> None:
    op.create_table(
        "contest_problems",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("contest_id", sa.Integer(), sa.ForeignKey("contest.id"), nullable=False),
        sa.Column("problem_id", sa.Integer(), sa.ForeignKey("problems.id"), nullable=False),
        sa.Column("version_id", sa.Integer(), sa.ForeignKey("problem_versions.id"), nullable=True),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.UniqueConstraint("contest_id", "problem_id", name="uq_contest_problems_contest_id"),
    )
    op.create_index("ix_contest_problems_contest_id", "contest_problems", ["contest_id"])
    op.create_index("ix_contest_problems_problem_id", "contest_problems", ["problem_id"])
    op.execute(
        "INSERT INTO contest_problems (contest_id, problem_id, version_id, position) "
        "SELECT 1, id, NULL, 0 FROM problems"
    )


def _registrations() -> None:
    op.create_table(
        "registrations",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("contest_id", sa.Integer(), sa.ForeignKey("contest.id"), nullable=False),
        sa.Column("team_id", sa.Integer(), sa.ForeignKey("teams.id"), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", STAMP, nullable=False),
        sa.UniqueConstraint("contest_id", "team_id", name="uq_registrations_contest_id"),
    )
    op.create_index("ix_registrations_contest_id", "registrations", ["contest_id"])
    op.create_index("ix_registrations_team_id", "registrations", ["team_id"])
    op.execute(
        sa.text(
            "INSERT INTO registrations (contest_id, team_id, status, created_at) "
            "SELECT 1, id, 'approved', created_at FROM teams WHERE system = :f"
        ).bindparams(f=False)
    )


def downgrade() -> None:
    with op.batch_alter_table("audit_log") as table:
        table.drop_index("ix_audit_log_contest_id")
        table.drop_column("contest_id")
    with op.batch_alter_table("submissions") as table:
        table.drop_index("ix_submissions_contest_id")
        table.drop_constraint("fk_submissions_contest_id_contest", type_="foreignkey")
        table.drop_column("contest_id")
    op.drop_table("registrations")
    op.drop_table("contest_problems")
    with op.batch_alter_table("contest") as table:
        table.drop_constraint("uq_contest_slug", type_="unique")
        table.drop_column("is_current")
        table.drop_column("slug")
