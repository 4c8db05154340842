"""identity: each user's home domain, whose admins manage the account

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02 23:00:00

"""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # plain ALTER TABLE, no foreign key: adding one on SQLite copies the table, and dropping
    # the old users table would cascade to memberships, sessions and tokens
    op.add_column("users", sa.Column("home_domain_id", sa.Integer(), nullable=True))
    op.create_index("ix_users_home_domain_id", "users", ["home_domain_id"])
    _backfill()


def _backfill() -> None:
    """A user who belongs to exactly one domain (projects, groups, admin rights) and is no
    platform admin has it as their home; everyone else has none (platform admins manage them)."""
    bind = op.get_bind()
    ties = sa.text(
        "SELECT m.user_id, p.domain_id FROM memberships m JOIN projects p ON p.id = m.project_id "
        "UNION SELECT g.user_id, u.domain_id FROM group_members g "
        "JOIN user_groups u ON u.id = g.group_id "
        "UNION SELECT user_id, domain_id FROM domain_admins"
    )
    domains: dict[int, set[int]] = {}
    for user_id, domain_id in bind.execute(ties):
        domains.setdefault(user_id, set()).add(domain_id)
    admins = {u for (u,) in bind.execute(sa.text("SELECT id FROM users WHERE is_platform_admin"))}
    update = sa.text("UPDATE users SET home_domain_id = :domain WHERE id = :user")
    for user_id, found in domains.items():
        if len(found) == 1 and user_id not in admins:
            bind.execute(update, {"domain": next(iter(found)), "user": user_id})


def downgrade() -> None:
    op.drop_index("ix_users_home_domain_id", table_name="users")
    op.drop_column("users", "home_domain_id")
