"""alert rules and channels, their states per subject, their deliveries

Revision ID: acct0003
Revises: acct0002
Create Date: 2026-12-03 06:30:00

"""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "acct0003"
down_revision = "acct0002"
branch_labels = None
depends_on = None

_TZ = sa.DateTime(timezone=True)


def _scope() -> list[sa.Column[str]]:
    return [
        sa.Column("scope_level", sa.String(length=16), nullable=False),
        sa.Column("scope_name", sa.String(length=64), nullable=False),
    ]


def upgrade() -> None:
    for table in ("acct_alert_rules", "acct_alert_channels"):
        op.create_table(
            table,
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("name", sa.String(length=64), nullable=False),
            *_scope(),
            sa.Column("document", sa.JSON(), nullable=False),
            sa.Column("created_by", sa.String(length=64), nullable=False),
            sa.Column("updated_at", _TZ, nullable=False),
            sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{table}")),
            sa.UniqueConstraint("name", name=op.f(f"uq_{table}_name")),
        )
    op.create_table(
        "acct_alert_states",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("rule", sa.String(length=64), nullable=False),
        sa.Column("subject", sa.String(length=128), nullable=False),
        *_scope(),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("since", _TZ, nullable=False),
        sa.Column("fired_at", _TZ, nullable=True),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("updated_at", _TZ, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_acct_alert_states")),
        sa.UniqueConstraint("rule", "subject", name=op.f("uq_acct_alert_states_rule_subject")),
    )
    op.create_table(
        "acct_alert_deliveries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("rule", sa.String(length=64), nullable=False),
        sa.Column("subject", sa.String(length=128), nullable=False),
        *_scope(),
        sa.Column("channel", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("http_status", sa.Integer(), nullable=True),
        sa.Column("error", sa.String(length=512), nullable=False),
        sa.Column("at", _TZ, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_acct_alert_deliveries")),
    )
    with op.batch_alter_table("acct_alert_deliveries", schema=None) as batch_op:
        batch_op.create_index("ix_acct_alert_deliveries_at", ["at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("acct_alert_deliveries", schema=None) as batch_op:
        batch_op.drop_index("ix_acct_alert_deliveries_at")
    for table in (
        "acct_alert_deliveries",
        "acct_alert_states",
        "acct_alert_channels",
        "acct_alert_rules",
    ):
        op.drop_table(table)
