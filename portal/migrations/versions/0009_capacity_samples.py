"""monitoring: capacity samples (cards, CPUs and queues over time) for the charts

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02 22:30:00

"""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "capacity_samples",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("step_s", sa.Integer(), nullable=False),
        sa.Column("cluster", sa.String(length=64), nullable=False),
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("total", sa.Float(), nullable=False),
        sa.Column("used", sa.Float(), nullable=False),
        sa.Column("free", sa.Float(), nullable=False),
        sa.Column("pending", sa.Integer(), nullable=False),
        sa.Column("running", sa.Integer(), nullable=False),
        sa.Column("wait_mean_s", sa.Float(), nullable=False),
        sa.Column("wait_max_s", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_capacity_samples_step_s_at", "capacity_samples", ["step_s", "at"])


def downgrade() -> None:
    op.drop_index("ix_capacity_samples_step_s_at", table_name="capacity_samples")
    op.drop_table("capacity_samples")
