"""usage records, rollups, import state, alert episodes, billing

The tables as the portal's history made them (its revision 0002) before accounting had a
history of its own: a database that has them without accounting's version table is stamped
at this revision instead (:func:`accounting.migrate.upgrade`).

Revision ID: acct0001
Revises:
Create Date: 2026-11-29 22:45:00

"""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "acct0001"
down_revision = None
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

    _billing()


def _billing() -> None:
    money = sa.BigInteger()
    op.create_table(
        "acct_price_plans",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("storage_price", money, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_acct_price_plans")),
        sa.UniqueConstraint("name", name=op.f("uq_acct_price_plans_name")),
    )
    op.create_table(
        "acct_prices",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("plan_id", sa.Integer(), nullable=False),
        sa.Column("resource", sa.String(length=8), nullable=False),
        sa.Column("model", sa.String(length=32), nullable=False),
        sa.Column("rate", money, nullable=False),
        sa.ForeignKeyConstraint(
            ["plan_id"],
            ["acct_price_plans.id"],
            name=op.f("fk_acct_prices_plan_id_acct_price_plans"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_acct_prices")),
        sa.UniqueConstraint(
            "plan_id", "resource", "model", name=op.f("uq_acct_prices_plan_id_resource_model")
        ),
    )
    op.create_table(
        "acct_packages",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("plan_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("monthly_fee", money, nullable=False),
        sa.Column("included_card_hours", money, nullable=False),
        sa.ForeignKeyConstraint(
            ["plan_id"],
            ["acct_price_plans.id"],
            name=op.f("fk_acct_packages_plan_id_acct_price_plans"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_acct_packages")),
        sa.UniqueConstraint("plan_id", "name", name=op.f("uq_acct_packages_plan_id_name")),
    )
    op.create_table(
        "acct_billing_accounts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant", sa.String(length=64), nullable=False),
        sa.Column("plan_id", sa.Integer(), nullable=False),
        sa.Column("package_id", sa.Integer(), nullable=True),
        sa.Column("storage_gib", money, nullable=False),
        sa.Column("balance", money, nullable=False),
        sa.ForeignKeyConstraint(
            ["package_id"],
            ["acct_packages.id"],
            name=op.f("fk_acct_billing_accounts_package_id_acct_packages"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["plan_id"],
            ["acct_price_plans.id"],
            name=op.f("fk_acct_billing_accounts_plan_id_acct_price_plans"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_acct_billing_accounts")),
        sa.UniqueConstraint("tenant", name=op.f("uq_acct_billing_accounts_tenant")),
    )
    op.create_table(
        "acct_bills",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("month", sa.DateTime(timezone=True), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("total", money, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["acct_billing_accounts.id"],
            name=op.f("fk_acct_bills_account_id_acct_billing_accounts"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_acct_bills")),
        sa.UniqueConstraint("account_id", "month", name=op.f("uq_acct_bills_account_id_month")),
    )
    op.create_table(
        "acct_bill_lines",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("bill_id", sa.Integer(), nullable=False),
        sa.Column("description", sa.String(length=128), nullable=False),
        sa.Column("quantity", money, nullable=False),
        sa.Column("unit_price", money, nullable=False),
        sa.Column("amount", money, nullable=False),
        sa.ForeignKeyConstraint(
            ["bill_id"],
            ["acct_bills.id"],
            name=op.f("fk_acct_bill_lines_bill_id_acct_bills"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_acct_bill_lines")),
    )
    op.create_table(
        "acct_ledger",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("amount", money, nullable=False),
        sa.Column("balance_after", money, nullable=False),
        sa.Column("note", sa.String(length=255), nullable=False),
        sa.Column("actor", sa.String(length=64), nullable=False),
        sa.Column("bill_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["acct_billing_accounts.id"],
            name=op.f("fk_acct_ledger_account_id_acct_billing_accounts"),
        ),
        sa.ForeignKeyConstraint(
            ["bill_id"], ["acct_bills.id"], name=op.f("fk_acct_ledger_bill_id_acct_bills")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_acct_ledger")),
    )
    with op.batch_alter_table("acct_ledger", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_acct_ledger_account_id"), ["account_id"], unique=False)


def downgrade() -> None:
    for table in (
        "acct_ledger",
        "acct_bill_lines",
        "acct_bills",
        "acct_billing_accounts",
        "acct_packages",
        "acct_prices",
        "acct_price_plans",
    ):
        op.drop_table(table)
    with op.batch_alter_table("acct_alert_episodes", schema=None) as batch_op:
        batch_op.drop_index("ix_acct_alert_episodes_open")
    op.drop_table("acct_alert_episodes")
    op.drop_table("acct_ingest_state")
    op.drop_table("acct_rollups")
    with op.batch_alter_table("acct_usage", schema=None) as batch_op:
        batch_op.drop_index("ix_acct_usage_end_time")
    op.drop_table("acct_usage")
