"""accounting: usage records, rollups, import state, alert episodes

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 22:45:00

"""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_KEY = ("cluster", "user", "account", "domain", "partition")


def upgrade() -> None:
    op.create_table(
        "acct_usage",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cluster", sa.String(length=64), nullable=False),
        sa.Column("job_id", sa.BigInteger(), nullable=False),
        sa.Column("step", sa.String(length=32), nullable=False),
        *(sa.Column(c, sa.String(length=64), nullable=False) for c in _KEY[1:]),
        sa.Column("qos", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("submit_time", sa.DateTime(timezone=True), nullable=True),
        sa.Column("start_time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("end_time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("elapsed_s", sa.BigInteger(), nullable=False),
        sa.Column("wait_s", sa.BigInteger(), nullable=False),
        sa.Column("gpu_type", sa.String(length=32), nullable=False),
        sa.Column("gpu_ucards", sa.BigInteger(), nullable=False),
        sa.Column("gpu_ucs", sa.BigInteger(), nullable=False),
        sa.Column("npu_type", sa.String(length=32), nullable=False),
        sa.Column("npu_ucards", sa.BigInteger(), nullable=False),
        sa.Column("npu_ucs", sa.BigInteger(), nullable=False),
        sa.Column("cpus", sa.Integer(), nullable=False),
        sa.Column("cpu_s", sa.BigInteger(), nullable=False),
        sa.Column("mem_mib", sa.BigInteger(), nullable=False),
        sa.Column("mem_mib_s", sa.BigInteger(), nullable=False),
        sa.Column("finished", sa.Boolean(), nullable=False),
        sa.Column("imported_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_acct_usage")),
        sa.UniqueConstraint(
            "cluster", "job_id", "step", name=op.f("uq_acct_usage_cluster_job_id_step")
        ),
    )
    with op.batch_alter_table("acct_usage", schema=None) as batch_op:
        batch_op.create_index("ix_acct_usage_end_time", ["end_time"], unique=False)

    op.create_table(
        "acct_rollups",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("period", sa.String(length=8), nullable=False),
        sa.Column("start", sa.DateTime(timezone=True), nullable=False),
        *(sa.Column(c, sa.String(length=64), nullable=False) for c in _KEY),
        sa.Column("gpu_type", sa.String(length=32), nullable=False),
        sa.Column("npu_type", sa.String(length=32), nullable=False),
        sa.Column("jobs", sa.Integer(), nullable=False),
        sa.Column("wait_s", sa.BigInteger(), nullable=False),
        sa.Column("gpu_ucs", sa.BigInteger(), nullable=False),
        sa.Column("npu_ucs", sa.BigInteger(), nullable=False),
        sa.Column("cpu_s", sa.BigInteger(), nullable=False),
        sa.Column("mem_mib_s", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_acct_rollups")),
        sa.UniqueConstraint(
            "period",
            "start",
            *_KEY,
            "gpu_type",
            "npu_type",
            name="uq_acct_rollups_key",
        ),
    )
    op.create_table(
        "acct_ingest_state",
        sa.Column("cluster", sa.String(length=64), nullable=False),
        sa.Column("imported_until", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("cluster", name=op.f("pk_acct_ingest_state")),
    )
    op.create_table(
        "acct_alert_episodes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("subject", sa.String(length=128), nullable=False),
        sa.Column("opened_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("recipients", sa.String(length=1024), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_acct_alert_episodes")),
    )
    with op.batch_alter_table("acct_alert_episodes", schema=None) as batch_op:
        batch_op.create_index(
            "ix_acct_alert_episodes_open", ["kind", "subject", "closed_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("acct_alert_episodes", schema=None) as batch_op:
        batch_op.drop_index("ix_acct_alert_episodes_open")
    op.drop_table("acct_alert_episodes")
    op.drop_table("acct_ingest_state")
    op.drop_table("acct_rollups")
    with op.batch_alter_table("acct_usage", schema=None) as batch_op:
        batch_op.drop_index("ix_acct_usage_end_time")
    op.drop_table("acct_usage")
