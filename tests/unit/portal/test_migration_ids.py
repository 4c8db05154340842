"""Migration 0014 on a database that holds rows: every id table becomes AUTOINCREMENT, no row
is lost (dropping a parent table with foreign keys on would cascade to its children), the
counters start above the ids the audit log names, and foreign keys are enforced after it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask_migrate import upgrade
from sqlalchemy import text

from portal.extensions import db
from tests.unit.portal.conftest import make_app


def _insert(table: str, **given: Any) -> None:
    """A row with ``given`` and a plain value in every other required column."""
    values = dict(given)
    for _, name, declared, notnull, default, _pk in db.session.execute(
        text(f"PRAGMA table_info({table})")
    ):
        if name in values or not notnull or default is not None or name == "id":
            continue
        kind = str(declared).upper()
        if name.endswith("_id") or "INT" in kind or "BOOL" in kind:
            values[name] = 1
        elif "DATE" in kind or "TIME" in kind:
            values[name] = "2026-01-01 00:00:00"
        else:
            values[name] = f"{name}-{given.get('id', '')}"
    cols = ", ".join(values)
    marks = ", ".join(f":{c}" for c in values)
    db.session.execute(text(f"INSERT INTO {table} ({cols}) VALUES ({marks})"), values)  # noqa: S608


def _count(table: str) -> int:
    return int(db.session.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())  # noqa: S608


def test_0014_keeps_every_row_and_never_reuses_an_id(tmp_path: Path) -> None:
    app = make_app(tmp_path / "old.db", tmp_path)
    with app.app_context():
        upgrade(revision="0013")
        _insert("domains", id=1, name="d")
        _insert("projects", id=1, domain_id=1, name="p")
        _insert("users", id=1, username="u")
        for ds in (1, 2, 3):
            _insert("datasets", id=ds, project_id=1, owner_id=1, name=f"ds{ds}")
            _insert("dataset_versions", id=ds, dataset_id=ds, version=1)
        # dataset 7 was deleted once: the audit log names it
        _insert("audit_events", action="dataset.delete", target_type="dataset", target_id="7")
        db.session.commit()
        tables = ("datasets", "dataset_versions", "projects", "users", "domains")
        before = {t: _count(t) for t in tables}
        upgrade()
        assert {t: _count(t) for t in tables} == before  # nothing cascaded
        sql = db.session.execute(
            text("SELECT sql FROM sqlite_master WHERE name = 'datasets'")
        ).scalar_one()
        assert "AUTOINCREMENT" in sql
        assert db.session.execute(text("PRAGMA foreign_keys")).scalar_one() == 1
        assert db.session.execute(text("PRAGMA foreign_key_check")).fetchall() == []
        db.session.execute(text("DELETE FROM datasets WHERE id = 3"))
        assert _count("dataset_versions") == 2  # the cascade works again
        _insert("datasets", project_id=1, owner_id=1, name="new")
        new_id = db.session.execute(text("SELECT max(id) FROM datasets")).scalar_one()
        assert new_id == 8  # neither 3 (deleted now) nor 7 (deleted before)
        db.session.rollback()
    with app.app_context():
        db.engine.dispose()
