"""accounting's tables moved to accounting's own history

This revision once created the ``acct_*`` tables. Accounting now owns them and migrates them
with its own history (``accounting/migrations``, version table ``accounting_alembic_version``),
which takes over a database where this revision made them (:func:`accounting.migrate.upgrade`).
The revision stays, empty, so that the portal's history keeps its shape.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 22:45:00

"""

# revision identifiers, used by Alembic.
revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
