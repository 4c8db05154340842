"""The portal's database on PostgreSQL: ``pg_dump`` (custom format) into the archive and
``pg_restore`` out of it, against a real server; the password never on an argv."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import make_url

from aipool.backup import archive, create, restore
from aipool.backup.manifest import BackupError
from aipool.backup.site import Site
from tests.unit.postgres import pg_url  # noqa: F401  (fixture)


def _plain(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _site(url: str) -> Site:
    return Site("aipool", url, None, (), ())


def test_pg_round_trip_and_refusal_over_data(pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    with psycopg.connect(_plain(pg_url), autocommit=True) as conn:
        conn.execute("CREATE TABLE bills (tenant text, amount numeric(12, 2))")
        conn.execute("INSERT INTO bills VALUES ('nlp', 900.00), ('vision', 12.50)")
        conn.execute("CREATE DATABASE restored")
    path, manifest = create.create(
        _site(pg_url),
        tmp_path,
        include_files=False,
        now=dt.datetime.now(dt.UTC),
        aipool_version="t",
        slurm_version="t",
    )
    assert manifest.parts["portal_db"]["kind"] == "postgresql"
    assert [m.name for m in archive.verify(path).manifest.members] == ["db/portal.pgdump"]

    target = make_url(pg_url).set(database="restored").render_as_string(hide_password=False)
    done = restore.restore(path, _site(target), restore.Options())
    assert "Restored the portal's database (postgresql)." in [str(d) for d in done]
    with psycopg.connect(_plain(target)) as conn:
        rows = conn.execute("SELECT tenant, amount::text FROM bills ORDER BY tenant").fetchall()
    assert rows == [("nlp", "900.00"), ("vision", "12.50")]

    with pytest.raises(BackupError, match="not empty"):
        restore.restore(path, _site(target), restore.Options())
    with psycopg.connect(_plain(target), autocommit=True) as conn:
        conn.execute("DELETE FROM bills WHERE tenant = 'nlp'")
    restore.restore(path, _site(target), restore.Options(force=True))
    with psycopg.connect(_plain(target)) as conn:
        assert conn.execute("SELECT count(*) FROM bills").fetchone() == (2,)


def test_an_sqlite_archive_is_not_restored_into_postgres(pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    import sqlite3

    db = tmp_path / "portal.db"
    sqlite3.connect(db).execute("CREATE TABLE t (a)").connection.commit()
    path, _ = create.create(
        _site(f"sqlite:///{db}"),
        tmp_path / "out",
        include_files=False,
        now=dt.datetime.now(dt.UTC),
        aipool_version="t",
        slurm_version="t",
    )
    with psycopg.connect(_plain(pg_url), autocommit=True) as conn:
        conn.execute("CREATE DATABASE empty_one")
    target = make_url(pg_url).set(database="empty_one").render_as_string(hide_password=False)
    with pytest.raises(BackupError, match="database is SQLite; this site runs PostgreSQL"):
        restore.restore(path, _site(target), restore.Options())
