"""energy per job and node, integrated from the node agent's power samples

Revision ID: acct0004
Revises: acct0003
Create Date: 2026-12-03 07:00:00

"""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "acct0004"
down_revision = "acct0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "acct_energy",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cluster", sa.String(length=64), nullable=False),
        sa.Column("job_id", sa.BigInteger(), nullable=False),
        sa.Column("node", sa.String(length=64), nullable=False),
        sa.Column("energy_j", sa.BigInteger(), nullable=False),
        sa.Column("samples", sa.Integer(), nullable=False),
        sa.Column("first_ts", sa.Float(), nullable=False),
        sa.Column("last_ts", sa.Float(), nullable=False),
        sa.Column("last_w", sa.Float(), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_acct_energy")),
        sa.UniqueConstraint(
            "cluster", "job_id", "node", name=op.f("uq_acct_energy_cluster_job_id_node")
        ),
    )
    op.create_index("ix_acct_energy_job", "acct_energy", ["cluster", "job_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_acct_energy_job", table_name="acct_energy")
    op.drop_table("acct_energy")
