"""An accounting database: SQLite with the accounting tables, per test; and the portal's
fixtures for the usage API and pages."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine

from accounting.models import TABLES
from portal.extensions import Base
from tests.unit.portal.conftest import (  # noqa: F401  (the portal's fixtures, for its usage pages)
    _cheap_password_hashing,
    env,
    seeded_db,
    shared_app,
)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    eng = create_engine(f"sqlite:///{tmp_path / 'acct.db'}")
    Base.metadata.create_all(eng, tables=TABLES)
    yield eng
    eng.dispose()
