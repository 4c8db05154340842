"""The migrations build exactly the schema the models describe (no drift): the portal's
history its tables, accounting's (run by the portal's upgrade) accounting's."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

from accounting import migrate as accounting_migrate
from accounting.db import Base as AccountingBase
from portal.database import include_name
from portal.extensions import Base, db
from tests.unit.portal.conftest import Env


def test_migrated_schema_matches_the_models(env: Env) -> None:
    with env.app.app_context(), db.engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"render_as_batch": True, "include_name": include_name}
        )
        diff = compare_metadata(context, Base.metadata)
    assert diff == []


def test_the_portals_upgrade_migrates_accountings_tables_too(env: Env) -> None:
    with env.app.app_context():
        names = set(inspect(db.engine).get_table_names())
        assert set(AccountingBase.metadata.tables) <= names
        assert not set(AccountingBase.metadata.tables) & set(Base.metadata.tables)
        assert accounting_migrate.state(db.engine).up_to_date
        assert accounting_migrate.drift(db.engine) == []
        # the portal's history leaves accounting's tables to accounting
        assert include_name("users", "table", {})
        assert include_name("id", "column", {"table_name": "acct_usage"})
        assert not include_name("acct_usage", "table", {})
        assert not include_name(accounting_migrate.VERSION_TABLE, "table", {})
