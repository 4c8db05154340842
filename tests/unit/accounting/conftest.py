"""An accounting database: SQLite with the accounting tables, per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine

from accounting.models import TABLES
from portal.extensions import Base


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    eng = create_engine(f"sqlite:///{tmp_path / 'acct.db'}")
    Base.metadata.create_all(eng, tables=TABLES)
    yield eng
    eng.dispose()
