"""ids never handed out twice: SQLite AUTOINCREMENT on every table whose id names something on
disk, in Slurm or in the audit log (datasets, versions, models, evaluations, services,
labelling, job records, projects, users, groups)

Without AUTOINCREMENT SQLite gives a new row the largest id plus one, so deleting the newest
dataset hands its id, and with it its directory's name, to the next one. SQLite adds
AUTOINCREMENT only by rebuilding a table. Alembic's batch rebuild drops the old table while
foreign keys are enforced (the portal turns them on for every connection), and dropping a
parent cascades to its children's rows; so the rebuild here runs with foreign keys off, in a
transaction of its own, checks them before it commits, and turns them back on.

Each table's counter starts above the largest id it holds and the largest id the audit log
names for its kind of object (a deleted row's). PostgreSQL's sequences never reuse a value:
nothing to do there.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-07 06:00:00

"""

import re
from typing import Any

from alembic import op

# revision identifiers, used by Alembic.
revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

#: table -> the audit log's kind of object for its ids ("" where the log does not name them)
TABLES = {
    "users": "user",
    "projects": "project",
    "user_groups": "group",
    "datasets": "dataset",
    "dataset_versions": "",
    "label_sets": "label_set",
    "label_tasks": "label_task",
    "registered_models": "model",
    "model_versions": "",
    "model_evaluations": "",
    "inference_services": "inference_service",
    "inference_replicas": "",
    "job_records": "",
}

_PK = re.compile(r',\s*(CONSTRAINT\s+"?\w+"?\s+)?PRIMARY KEY\s*\(\s*"?id"?\s*\)')
_ID = re.compile(r'([(,]\s*)("?id"?\s+INTEGER\s+NOT\s+NULL)')


def autoincrement_sql(sql: str, table: str, new_name: str) -> str:
    """``CREATE TABLE`` of ``table`` as ``new_name`` with ``id`` an AUTOINCREMENT key."""
    head = re.compile(rf'^\s*CREATE TABLE\s+"?{table}"?\s*\(')
    out, n_head = head.subn(f'CREATE TABLE "{new_name}" (', sql, count=1)
    out, n_pk = _PK.subn("", out)
    out, n_id = _ID.subn(r"\1\2 PRIMARY KEY AUTOINCREMENT", out, count=1)
    if (n_head, n_pk, n_id) != (1, 1, 1):
        raise RuntimeError(f"{table}: its CREATE TABLE is not the one this revision knows: {sql}")
    return out


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return
    raw: Any = bind.connection.dbapi_connection
    raw.commit()  # the revisions before this one are kept; the pragma acts only outside one
    cur = raw.cursor()
    cur.execute("PRAGMA foreign_keys=OFF")
    try:
        cur.execute("BEGIN")
        for table, kind in TABLES.items():
            _rebuild(cur, table, kind)
        broken = cur.execute("PRAGMA foreign_key_check").fetchall()
        if broken:
            raise RuntimeError(f"foreign keys broken by the rebuild: {broken[:5]}")
        raw.commit()
    except BaseException:
        raw.rollback()
        raise
    finally:
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()


def _rebuild(cur: Any, table: str, kind: str) -> None:
    row = cur.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    if row is None or "AUTOINCREMENT" in row[0].upper():
        return
    new = f"_ids_new_{table}"
    indexes = [
        r[0]
        for r in cur.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? "
            "AND sql IS NOT NULL",
            (table,),
        )
    ]
    cur.execute(autoincrement_sql(row[0], table, new))
    cur.execute(f'INSERT INTO "{new}" SELECT * FROM "{table}"')  # noqa: S608 - our names
    cur.execute(f'DROP TABLE "{table}"')
    cur.execute(f'ALTER TABLE "{new}" RENAME TO "{table}"')
    for sql in indexes:
        cur.execute(sql)
    high = cur.execute(f'SELECT coalesce(max(id), 0) FROM "{table}"').fetchone()[0]  # noqa: S608
    if kind:
        named = cur.execute(
            "SELECT coalesce(max(CAST(target_id AS INTEGER)), 0) FROM audit_events "
            "WHERE target_type = ? AND target_id GLOB '[0-9]*'",
            (kind,),
        ).fetchone()[0]
        high = max(high, int(named))
    cur.execute("DELETE FROM sqlite_sequence WHERE name = ?", (table,))
    cur.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", (table, high))


def downgrade() -> None:
    """AUTOINCREMENT stays: the earlier schema works with it, and dropping it would let ids
    be handed out twice again."""
