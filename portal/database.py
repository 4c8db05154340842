"""The portal's database: the portal's own Alembic history and accounting's, side by side.

The portal's tables are migrated by ``portal/migrations`` (through Flask-Migrate, recorded in
``alembic_version``); accounting's, which the portal reads for usage, plans and bills, by
accounting's own history (:mod:`accounting.migrate`, recorded in
``accounting_alembic_version``). No foreign key crosses between them: bills name their tenant
by its Slurm account name, so either history can run first.

:func:`upgrade` migrates both; ``aipool portal`` runs it at start. ``flask db …`` works on the
portal's history alone, and its autogenerate leaves accounting's tables to accounting
(:func:`include_name`).
"""

from __future__ import annotations

from typing import Any

from accounting import migrate as accounting_migrate


def upgrade() -> None:
    """Both histories to their newest revision (inside an app context)."""
    from flask_migrate import upgrade as portal_upgrade

    from portal.extensions import db

    portal_upgrade()
    accounting_migrate.upgrade(db.engine)


def include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    """Alembic's ``include_name`` hook for the portal's history: every table but accounting's."""
    return type_ != "table" or name is None or not accounting_migrate.owns(name)
