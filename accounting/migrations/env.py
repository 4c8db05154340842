"""Accounting's Alembic environment: its tables, recorded in its own version table.

It runs through :mod:`accounting.migrate` (``aipool accounting db …``, the portal's start),
which hands over a connection in ``config.attributes["connection"]``; other tables in the same
database (the portal's) are left alone.
"""

from __future__ import annotations

from alembic import context

import accounting.models  # noqa: F401  (registers every table on the base)
from accounting.db import Base
from accounting.migrate import VERSION_TABLE, include_name


def run_migrations() -> None:
    connection = context.config.attributes.get("connection")
    if connection is None or context.is_offline_mode():
        raise RuntimeError(
            "accounting's migrations run on a connection: use `aipool accounting db upgrade`"
        )
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        version_table=VERSION_TABLE,
        include_name=include_name,
        render_as_batch=True,  # SQLite alters tables by copying them
    )
    with context.begin_transaction():
        context.run_migrations()


run_migrations()
