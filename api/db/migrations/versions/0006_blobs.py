"""Blob store: blobs and their chunks (api.blobs.database), and each problem version's
package blob

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "blobs",
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("sha256", name="pk_blobs"),
    )
    op.create_table(
        "blob_chunks",
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("sha256", "seq", name="pk_blob_chunks"),
    )
    with op.batch_alter_table("problem_versions") as batch:
        batch.add_column(sa.Column("package_blob", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("problem_versions") as batch:
        batch.drop_column("package_blob")
    op.drop_table("blob_chunks")
    op.drop_table("blobs")
