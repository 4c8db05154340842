"""An accounting database per test: SQLite with accounting's tables from its own migrations
(migrated once per session, copied per test). Nothing of the portal."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine

from accounting import migrate


@pytest.fixture(scope="session")
def migrated_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database file with accounting's tables at the newest revision, built once."""
    path = tmp_path_factory.mktemp("acct-db") / "migrated.db"
    engine = create_engine(f"sqlite:///{path}")
    migrate.upgrade(engine)
    engine.dispose()
    return path


@pytest.fixture
def engine(migrated_db: Path, tmp_path: Path) -> Iterator[Engine]:
    path = tmp_path / "acct.db"
    shutil.copyfile(migrated_db, path)
    eng = create_engine(f"sqlite:///{path}")
    yield eng
    eng.dispose()
