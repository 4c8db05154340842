"""datasets: shares with a user, a project or a domain, read-only, until an expiry

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03 09:00:00

"""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "dataset_shares",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("grantee_kind", sa.String(length=16), nullable=False),
        sa.Column("grantee_id", sa.Integer(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_by_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["created_by_id"], ["users.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("dataset_id", "grantee_kind", "grantee_id"),
    )
    op.create_index("ix_dataset_shares_dataset_id", "dataset_shares", ["dataset_id"])


def downgrade() -> None:
    op.drop_index("ix_dataset_shares_dataset_id", table_name="dataset_shares")
    op.drop_table("dataset_shares")
