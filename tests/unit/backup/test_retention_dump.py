"""Retention (which archives prune removes), slurmdbd's storage settings and the MariaDB
defaults file that keeps its password off every argv, and the command's exit codes."""

from __future__ import annotations

import datetime as dt
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from aipool.backup import create, dump
from aipool.backup.cli import backup
from aipool.backup.manifest import BackupError
from translations import reader_locale

NOW = dt.datetime(2026, 6, 10, 12, 0, tzinfo=dt.UTC)


def _name(days_ago: float) -> str:
    return create.archive_name("aipool", NOW - dt.timedelta(days=days_ago))


def test_keep_the_newest_n() -> None:
    names = [_name(d) for d in (0, 1, 2, 3, 4)]
    assert create.prunable(names, keep=3, keep_days=None, now=NOW) == sorted(names[3:])


def test_keep_days_keeps_the_young_beyond_n() -> None:
    names = [_name(d) for d in (0, 1, 2, 8, 9)]
    assert create.prunable(names, keep=1, keep_days=7, now=NOW) == sorted([_name(8), _name(9)])


def test_the_newest_archive_always_stays() -> None:
    names = [_name(30), _name(40)]
    assert create.prunable(names, keep=0, keep_days=1, now=NOW) == [_name(40)]


def test_prune_removes_archives_and_their_checksums_only(tmp_path: Path) -> None:
    names = [_name(d) for d in (0, 1, 2)]
    for n in names:
        (tmp_path / n).write_bytes(b"x")
        (tmp_path / f"{n}.sha256").write_text("0  x\n")
    (tmp_path / "aipool-backup-notes.tar.gz").write_text("not ours to judge")
    removed = create.prune(tmp_path, keep=1, keep_days=None, now=NOW)
    assert sorted(p.name for p in removed) == sorted(names[1:])
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([names[0], f"{names[0]}.sha256", "aipool-backup-notes.tar.gz"])


def test_slurmdbd_storage_from_its_config(tmp_path: Path) -> None:
    conf = tmp_path / "slurmdbd.conf"
    conf.write_text(
        "# accounting\nStorageType=accounting_storage/mysql\nStorageHost=127.0.0.1\n"
        "StoragePort=13306\nStorageUser=slurm\nStoragePass=p#ss  # a comment\n"
        "StorageLoc=slurm_acct_db\n"
    )
    s = dump.DbdStorage.read(conf)
    assert (s.host, s.port, s.user, s.database) == ("127.0.0.1", 13306, "slurm", "slurm_acct_db")
    assert s.password == "p", "slurmdbd.conf has no quoting: a # starts a comment there too"


def test_unreadable_slurmdbd_config_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(BackupError, match="cannot be read"):
        dump.DbdStorage.read(tmp_path / "missing.conf")


def test_defaults_file_is_private_and_quotes_the_password() -> None:
    storage = dump.DbdStorage("db.example", 3306, "slurm", 'a"b\\c', "acct")
    with dump._defaults_file(storage) as path:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        text = path.read_text()
    assert 'password="a\\"b\\\\c"' in text
    assert not path.exists(), "removed once the call returns"


def test_postgres_password_goes_in_the_environment_not_argv() -> None:
    env = dump._pg_env("postgresql+psycopg://portal:s3cret@db:5433/aipool")
    assert (env["PGHOST"], env["PGPORT"], env["PGUSER"]) == ("db", "5433", "portal")
    assert (env["PGPASSWORD"], env["PGDATABASE"]) == ("s3cret", "aipool")


def test_reader_locale_follows_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("LC_ALL", "LC_MESSAGES", "LANG", "AIPOOL_DEFAULT_LOCALE"):
        monkeypatch.delenv(var, raising=False)
    assert reader_locale(None) == "en"
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert reader_locale(None) == "zh_CN"
    assert reader_locale("en") == "en"


def test_verify_command_fails_with_the_reason(tmp_path: Path) -> None:
    bad = tmp_path / "aipool-backup-x-20260101T000000Z.tar.gz"
    bad.write_bytes(b"garbage")
    result = CliRunner().invoke(backup, ["verify", str(bad), "--locale", "en"])
    assert result.exit_code == 1
    assert "damaged or truncated" in result.output


def test_create_and_verify_commands(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "slurm.conf").write_text("ClusterName=c\n")
    args = ["--no-slurmdbd", "--config-dir", f"etc={tmp_path / 'etc'}", "--cluster", "c"]
    made = CliRunner().invoke(backup, ["create", "--to", str(tmp_path / "out"), *args])
    assert made.exit_code == 0, made.output
    (path,) = (tmp_path / "out").glob("*.tar.gz")
    assert f"Wrote {path}" in made.output
    checked = CliRunner().invoke(backup, ["verify", str(path), "--locale", "en"])
    assert checked.exit_code == 0, checked.output
    assert "is sound: 1 members" in checked.output
    bad = CliRunner().invoke(backup, ["create", "--config-dir", "etc=relative", *args[:1]])
    assert bad.exit_code == 2
    assert "LABEL=/absolute/path" in bad.output
