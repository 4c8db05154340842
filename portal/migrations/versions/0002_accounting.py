"""accounting: usage records, rollups, price plans, balances, bills, alerts

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 22:45:00

"""

import sqlalchemy as sa  # noqa: F401
from alembic import op  # noqa: F401

# revision identifiers, used by Alembic.
revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
