"""The migrations build exactly the schema the models describe (no drift)."""

from __future__ import annotations

from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from portal.extensions import Base, db
from tests.unit.portal.conftest import Env


def test_migrated_schema_matches_the_models(env: Env, tmp_path: Path) -> None:
    with env.app.app_context(), db.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"render_as_batch": True})
        diff = compare_metadata(context, Base.metadata)
    assert diff == []
