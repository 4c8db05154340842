"""price plans' effective dates; what each bill line is (item, model, in the package)

Revision ID: acct0002
Revises: acct0001
Create Date: 2026-12-02 10:00:00

"""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "acct0002"
down_revision = "acct0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("acct_price_plans", schema=None) as batch_op:
        batch_op.add_column(sa.Column("effective_from", sa.Date(), nullable=True))
        batch_op.add_column(sa.Column("effective_until", sa.Date(), nullable=True))
    with op.batch_alter_table("acct_bill_lines", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("item", sa.String(length=16), server_default=sa.text("''"), nullable=False)
        )
        batch_op.add_column(
            sa.Column("model", sa.String(length=64), server_default=sa.text("''"), nullable=False)
        )
        batch_op.add_column(
            sa.Column("in_package", sa.Boolean(), server_default=sa.false(), nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("acct_bill_lines", schema=None) as batch_op:
        batch_op.drop_column("in_package")
        batch_op.drop_column("model")
        batch_op.drop_column("item")
    with op.batch_alter_table("acct_price_plans", schema=None) as batch_op:
        batch_op.drop_column("effective_until")
        batch_op.drop_column("effective_from")
