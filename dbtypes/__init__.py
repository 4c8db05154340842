"""Column types and conventions that the portal's tables and accounting's share.

Both packages declare their tables on a declarative base of their own and migrate them with an
Alembic history of their own; what they have in common lives here, below both, so that
accounting needs nothing of the portal (nor Flask) and the two schemas follow the same rules:

- :func:`utcnow` and :class:`UTCDateTime`: timezone-aware UTC times on every backend;
- :data:`NAMING_CONVENTION`: every constraint and index named, so Alembic can alter them (SQLite's
  batch mode needs names);
- SQLite connections check foreign keys, as PostgreSQL always does.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, MetaData, TypeDecorator, event
from sqlalchemy.engine import Dialect, Engine

__all__ = ["NAMING_CONVENTION", "UTCDateTime", "metadata", "utcnow"]

NAMING_CONVENTION: dict[str, str] = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def metadata() -> MetaData:
    """A new, empty metadata with the shared naming convention (one per declarative base)."""
    return MetaData(naming_convention=NAMING_CONVENTION)


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite drops the zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC) if value is not None else None

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value


@event.listens_for(Engine, "connect")
def _sqlite_foreign_keys(dbapi_connection: Any, _record: Any) -> None:
    """SQLite checks foreign keys (and cascades deletes) only when asked, per connection."""
    if isinstance(dbapi_connection, sqlite3.Connection):
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()
