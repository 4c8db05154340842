"""inference: a crash-looping replica backs off; its last error is kept

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 18:45:00

"""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("inference_replicas") as batch:
        batch.add_column(sa.Column("failures", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("retry_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(
            sa.Column("last_error", sa.String(length=1000), nullable=False, server_default="")
        )


def downgrade() -> None:
    with op.batch_alter_table("inference_replicas") as batch:
        batch.drop_column("last_error")
        batch.drop_column("retry_at")
        batch.drop_column("failures")
