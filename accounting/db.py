"""Accounting's declarative base: its tables, in a metadata of their own.

Accounting owns these tables and their Alembic history (``accounting/migrations``, recorded in
its own version table, :mod:`accounting.migrate`); they may share a database with the
portal's, which reads them, but nothing here knows the portal. The column types and naming
rules both use come from :mod:`dbtypes`.
"""

from __future__ import annotations

from sqlalchemy.orm import DeclarativeBase

import dbtypes


class Base(DeclarativeBase):
    metadata = dbtypes.metadata()
