"""Accounting's own Alembic history: a fresh database gets every table as the models describe
it; tables the portal's history made are taken over; other tables in the same database are
left alone; ``aipool accounting db`` drives it; and accounting needs neither Flask nor the
portal."""

from __future__ import annotations

import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import Column, Engine, Integer, MetaData, Table, create_engine, inspect, text
from sqlalchemy.orm import Session

from accounting import migrate
from accounting.billing_models import PricePlan
from accounting.cli import accounting
from accounting.db import Base


@pytest.fixture
def fresh(tmp_path: Path) -> Engine:
    return create_engine(f"sqlite:///{tmp_path / 'fresh.db'}")


def tables(engine: Engine) -> set[str]:
    return set(inspect(engine).get_table_names())


def test_a_fresh_database_gets_every_table_as_the_models_say(fresh: Engine) -> None:
    assert migrate.state(fresh) == migrate.State(None, migrate.head())
    migrate.upgrade(fresh)
    assert migrate.state(fresh).up_to_date
    assert tables(fresh) == {*Base.metadata.tables, migrate.VERSION_TABLE}
    assert migrate.drift(fresh) == []
    migrate.downgrade(fresh, "base")
    assert tables(fresh) == {migrate.VERSION_TABLE}
    assert migrate.state(fresh).current is None


def test_tables_the_portals_history_made_are_taken_over(engine: Engine) -> None:
    # as the portal's history left a database: the first revision's tables, with a plan, and
    # no version table of accounting's
    migrate.downgrade(engine, migrate.FIRST)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO acct_price_plans (name, currency, storage_price) "
                "VALUES ('standard', 'CNY', 100000)"
            )
        )
        conn.execute(text(f"DROP TABLE {migrate.VERSION_TABLE}"))
    assert migrate.state(engine).current is None
    migrate.upgrade(engine)
    assert migrate.state(engine).up_to_date
    assert migrate.drift(engine) == []
    with Session(engine) as s:  # nothing made again or lost
        assert s.query(PricePlan.name, PricePlan.storage_price).all() == [
            ("standard", Decimal("0.10"))
        ]
    migrate.upgrade(engine)  # and again: nothing to do
    assert migrate.state(engine).up_to_date


def test_other_tables_in_the_database_are_left_alone(fresh: Engine) -> None:
    theirs = MetaData()
    Table("users", theirs, Column("id", Integer, primary_key=True))
    Table("alembic_version", theirs, Column("version_num", Integer, primary_key=True))
    theirs.create_all(fresh)
    migrate.upgrade(fresh)
    assert {"users", "alembic_version", "acct_usage"} <= tables(fresh)
    assert migrate.drift(fresh) == []  # the other tables are not accounting's to drop
    migrate.downgrade(fresh, "base")
    assert tables(fresh) == {"users", "alembic_version", migrate.VERSION_TABLE}
    assert migrate.owns("acct_usage")
    assert migrate.owns("acct_table_of_a_later_revision")
    assert not migrate.owns("users")


def test_a_revision_from_unchanged_models_changes_nothing(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ``alembic check`` asks: autogenerate finds nothing between models and history."""
    copy = tmp_path / "migrations"
    shutil.copytree(migrate.MIGRATIONS, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(migrate, "MIGRATIONS", copy)
    before = migrate.head()
    after = f"acct{int(before.removeprefix('acct')) + 1:04d}"
    path = migrate.revision(engine, "nothing changed")
    body = path.read_text()
    assert path == copy / "versions" / f"{after}_nothing_changed.py"
    assert f"down_revision = {before!r}" in body
    assert migrate.head() == after
    upgrade = body[body.index("def upgrade") : body.index("def downgrade")]
    assert "op." not in upgrade


def run(engine: Engine, *args: str) -> tuple[int, str]:
    url = engine.url.render_as_string(hide_password=False)
    res = CliRunner().invoke(accounting, [*args[:2], "--db", url, *args[2:]])
    return res.exit_code, res.output


def test_the_db_commands(fresh: Engine) -> None:
    code, out = run(fresh, "db", "current")
    assert (code, out) == (0, f"none (newest {migrate.head()})\n")
    code, out = run(fresh, "db", "check")
    assert code == 1
    assert "accounting's tables at none" in out
    url = fresh.url.render_as_string(hide_password=False)
    res = CliRunner().invoke(accounting, ["purge", "--db", url])
    assert res.exit_code == 1
    assert "has no accounting tables: migrate it first" in res.output
    assert run(fresh, "db", "upgrade", "no-such-revision")[0] == 2
    code, out = run(fresh, "db", "upgrade")
    assert (code, out) == (0, f"accounting's tables at revision {migrate.head()}\n")
    code, out = run(fresh, "db", "check")
    assert code == 0, out
    assert "as the models describe them" in out
    res = CliRunner().invoke(accounting, ["purge", "--db", url])
    assert res.exit_code == 0, res.output
    code, out = run(fresh, "db", "downgrade", "base")
    assert (code, out) == (0, "accounting's tables at revision base (none)\n")
    assert tables(fresh) == {migrate.VERSION_TABLE}


def test_accounting_runs_alone(engine: Engine) -> None:
    """In a fresh interpreter, as ``aipool accounting db check`` from cron starts: the
    migration module alone knows every table (nothing imported the models before), and no
    accounting module brings in Flask, the portal or the lab."""
    probe = (
        "import importlib, pkgutil, sys\n"
        "from sqlalchemy import create_engine\n"
        "from accounting import migrate\n"
        "print(len(migrate.drift(create_engine(sys.argv[1]))))\n"
        "import accounting\n"
        "for m in pkgutil.walk_packages(accounting.__path__, 'accounting.'):\n"
        "    importlib.import_module(m.name)\n"
        "bad = sorted(n for n in sys.modules if n.split('.')[0] in {'flask', 'portal'}"
        " or n.startswith('aipool.lab'))\n"
        "print(len([n for n in sys.modules if n.startswith('accounting.')]), bad)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, engine.url.render_as_string(hide_password=False)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parents[3],
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    drifted, imported = done.stdout.splitlines()
    assert drifted == "0"
    count, bad = imported.split(" ", 1)
    assert int(count) >= 15  # the probe really imported the package's modules
    assert bad == "[]"
