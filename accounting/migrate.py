"""Accounting's own Alembic history: its tables, its version table, its commands.

The revisions live in ``accounting/migrations/versions`` and the database records where it got
to in ``accounting_alembic_version``, so accounting's tables can share a database with the
portal's (whose history records itself in ``alembic_version``) or stand alone. The portal
migrates both when it starts (``portal.database.upgrade``); ``aipool accounting db upgrade``
migrates accounting's alone, e.g. for a cron job or service without a portal.

Before accounting had a history of its own, the portal's history made these tables. A database
that has them but no ``accounting_alembic_version`` is stamped at the first revision, which
made the same tables, and goes on from there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, inspect

import accounting.models  # noqa: F401  (every table on the base, for owns() and drift())
from accounting.db import Base

__all__ = [
    "FIRST",
    "VERSION_TABLE",
    "State",
    "downgrade",
    "drift",
    "head",
    "include_name",
    "owns",
    "revision",
    "state",
    "upgrade",
]

MIGRATIONS = Path(__file__).with_name("migrations")
VERSION_TABLE = "accounting_alembic_version"
#: the first revision: the tables as the portal's history made them
FIRST = "acct0001"
#: every accounting table is named so: one that a later revision drops is still accounting's
PREFIX = "acct_"
#: a table the first revision made: its presence without a version table means the portal's
#: old history made them
_MARKER = "acct_usage"


def owns(table: str) -> bool:
    """Whether ``table`` is accounting's (a model's, one it dropped, or its version table):
    other histories sharing the database leave it alone."""
    return table == VERSION_TABLE or table.startswith(PREFIX) or table in Base.metadata.tables


def include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    """Alembic's ``include_name`` hook: only accounting's tables, whatever else the database
    holds (the portal's, when they share one)."""
    return type_ != "table" or name is None or owns(name)


def _config(connection: Connection | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("file_template", "%%(rev)s_%%(slug)s")  # acct0002_add_something.py
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def head() -> str:
    """The newest revision of accounting's history."""
    found = ScriptDirectory.from_config(_config()).get_current_head()
    if found is None:
        raise RuntimeError(f"no revisions in {MIGRATIONS}")
    return found


def _context(conn: Connection) -> MigrationContext:
    return MigrationContext.configure(
        conn,
        opts={
            "version_table": VERSION_TABLE,
            "include_name": include_name,
            "render_as_batch": True,
        },
    )


def _made_before_own_history(conn: Connection) -> bool:
    tables = inspect(conn)
    return tables.has_table(_MARKER) and not tables.has_table(VERSION_TABLE)


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring accounting's tables to ``revision`` (the newest by default), in one transaction
    where the database has transactional DDL (PostgreSQL)."""
    with engine.begin() as conn:
        cfg = _config(conn)
        if _made_before_own_history(conn):
            command.stamp(cfg, FIRST)
        command.upgrade(cfg, revision)


def downgrade(engine: Engine, revision: str) -> None:
    """Take accounting's tables back to ``revision`` (``base``: none left)."""
    with engine.begin() as conn:
        command.downgrade(_config(conn), revision)


@dataclass(frozen=True, slots=True)
class State:
    """Where a database's accounting tables are: its revision (``None``: not migrated) and
    the newest one."""

    current: str | None
    head: str

    @property
    def up_to_date(self) -> bool:
        return self.current == self.head


def state(engine: Engine) -> State:
    with engine.connect() as conn:
        current = _context(conn).get_current_revision()
    return State(current, head())


def drift(engine: Engine) -> list[Any]:
    """How the migrated tables differ from the models (Alembic's autogenerate comparison, as
    ``alembic check`` makes it); empty when they agree."""
    with engine.connect() as conn:
        return list(compare_metadata(_context(conn), Base.metadata))


def revision(engine: Engine, message: str, *, autogenerate: bool = True) -> Path:
    """Write a new revision into ``accounting/migrations/versions`` (a checkout's), from the
    difference between the models and ``engine``'s tables (migrated to the newest first)."""
    newest = head()
    number = int(newest.removeprefix("acct")) + 1  # revisions in order: acct0001, acct0002, …
    with engine.begin() as conn:
        made = command.revision(
            _config(conn), message, autogenerate=autogenerate, rev_id=f"acct{number:04d}"
        )
    scripts = made if isinstance(made, list) else [made]
    if not scripts or scripts[0] is None:
        raise RuntimeError("alembic wrote no revision")
    return Path(scripts[0].path)
