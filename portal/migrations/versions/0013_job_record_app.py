"""jobs: the app a portal-submitted job launched ("jupyter"; "" for any other job), so the
portal proxies only the Jupyter jobs it started itself

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-07 05:00:00

"""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("job_records") as batch:
        batch.add_column(sa.Column("app", sa.String(length=16), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("job_records") as batch:
        batch.drop_column("app")
