"""elastic nodes' powered-down spans, from the power programs' event log

Revision ID: acct0005
Revises: acct0004
Create Date: 2026-12-03 10:20:00

"""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "acct0005"
down_revision = "acct0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "acct_power_off",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cluster", sa.String(length=64), nullable=False),
        sa.Column("node", sa.String(length=64), nullable=False),
        sa.Column("start_ts", sa.Float(), nullable=False),
        sa.Column("end_ts", sa.Float(), nullable=True),
        sa.Column("watts", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_acct_power_off")),
        sa.UniqueConstraint(
            "cluster", "node", "start_ts", name=op.f("uq_acct_power_off_cluster_node_start_ts")
        ),
    )
    op.create_index("ix_acct_power_off_end", "acct_power_off", ["cluster", "end_ts"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_acct_power_off_end", table_name="acct_power_off")
    op.drop_table("acct_power_off")
