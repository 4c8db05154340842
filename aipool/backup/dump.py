"""The databases' own tools, as argv lists: SQLite's online backup API, ``pg_dump`` /
``pg_restore`` and ``mariadb-dump`` / ``mariadb``. Credentials never travel on an argv:
PostgreSQL's password goes in the child's environment, MariaDB's in a defaults file of mode
0600 that only this process can read, removed when the call returns."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from sqlalchemy import URL, create_engine, inspect, make_url

from aipool.backup.manifest import error
from translations import N_

TIMEOUT_S = 3600  # a dump of a large accounting database takes minutes, not hours


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def sqlite_path(url: str) -> Path:
    database = make_url(url).database
    if not database or database == ":memory:":
        raise error(N_("The portal's database %(url)s is not a file."), url=url)
    return Path(database)


def sqlite_backup(source: Path, target: Path) -> None:
    """A consistent copy while the portal writes: SQLite's online backup API."""
    if not source.is_file():
        raise error(N_("The portal's database %(path)s does not exist."), path=source)
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)  # all pages in one step: a snapshot no writer can tear
    finally:
        dst.close()
        src.close()


def sqlite_has_tables(path: Path) -> bool:
    """Whether the database holds anything, read without leaving a trace (a plain read-only
    open of a WAL database would make its ``-shm`` file); an unmerged log counts as data."""
    if not path.exists():
        return False
    wal = path.with_name(path.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        return True
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return bool(con.execute("SELECT 1 FROM sqlite_master WHERE type='table'").fetchone())
    finally:
        con.close()


def sqlite_restore(copy: Path, target: Path, owner: str | None) -> None:
    """Put the archived database in place with one rename (its journal files go first: they
    belong to the database it replaces)."""
    con = sqlite3.connect(f"file:{copy}?mode=ro", uri=True)
    try:
        ok = con.execute("PRAGMA quick_check").fetchone()
    finally:
        con.close()
    if not ok or ok[0] != "ok":
        raise error(N_("The archived portal database fails SQLite's check: %(why)s"), why=ok)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.restoring")
    shutil.copyfile(copy, tmp)
    tmp.chmod(0o600)
    if owner:
        shutil.chown(tmp, owner, owner)
    for journal in ("-wal", "-shm", "-journal"):
        target.with_name(target.name + journal).unlink(missing_ok=True)
    tmp.replace(target)


def _pg_env(url: str) -> dict[str, str]:
    """libpq's variables for ``url``: the password reaches the child only through these."""
    u: URL = make_url(url)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    pairs = {
        "PGHOST": u.host,
        "PGPORT": str(u.port) if u.port else None,
        "PGUSER": u.username,
        "PGPASSWORD": u.password,
        "PGDATABASE": u.database,
    }
    env.update({k: str(v) for k, v in pairs.items() if v})
    return env


def _run(
    argv: list[str],
    *,
    env: Mapping[str, str] | None = None,
    stdin: IO[bytes] | None = None,
    stdout: IO[bytes] | None = None,
) -> None:
    try:
        done = subprocess.run(  # noqa: S603 - fixed argv of the database's own tool
            argv,
            env=env,
            stdin=stdin if stdin is not None else subprocess.DEVNULL,
            stdout=stdout if stdout is not None else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            check=False,
            timeout=TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise error(N_("%(tool)s could not run: %(why)s"), tool=argv[0], why=exc) from None
    if done.returncode != 0:
        why = (done.stderr or b"").decode(errors="replace").strip()[-500:]
        raise error(N_("%(tool)s failed: %(why)s"), tool=argv[0], why=why)


def pg_dump(url: str, target: Path) -> None:
    _run(["pg_dump", "--format=custom", "--no-owner", f"--file={target}"], env=_pg_env(url))


def pg_restore(url: str, dump: Path) -> None:
    database = make_url(url).database or ""
    argv = ["pg_restore", "--clean", "--if-exists", "--no-owner", f"--dbname={database}"]
    _run([*argv, str(dump)], env=_pg_env(url))


def database_has_tables(url: str) -> bool:
    if is_sqlite(url):
        return sqlite_has_tables(sqlite_path(url))
    engine = create_engine(url)
    try:
        return bool(inspect(engine).get_table_names())
    finally:
        engine.dispose()


@dataclass(frozen=True, slots=True)
class DbdStorage:
    """Where slurmdbd keeps its accounting: the Storage* lines of ``slurmdbd.conf``."""

    host: str
    port: int
    user: str
    password: str
    database: str

    @classmethod
    def read(cls, conf: Path) -> DbdStorage:
        try:
            text = conf.read_text()
        except PermissionError:
            raise error(
                N_(
                    "%(path)s cannot be read by this user: name a file of the backup's "
                    "read-only account with --slurmdbd-conf, or run this as root (docs/backup.md)."
                ),
                path=conf,
            ) from None
        except OSError as exc:
            raise error(N_("%(path)s cannot be read: %(why)s"), path=conf, why=exc) from None
        keys: dict[str, str] = {}
        for line in text.splitlines():
            key, sep, value = line.split("#", 1)[0].strip().partition("=")
            if sep:
                keys[key.strip().lower()] = value.strip()
        return cls(
            host=keys.get("storagehost", "localhost"),
            port=int(keys.get("storageport", "3306")),
            user=keys.get("storageuser", "slurm"),
            password=keys.get("storagepass", ""),
            database=keys.get("storageloc", "slurm_acct_db"),
        )


def _option(value: str) -> str:
    """A value quoted for a MariaDB option file."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@contextmanager
def _defaults_file(storage: DbdStorage) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="aipool-backup-") as tmp:  # mode 0700
        path = Path(tmp) / "client.cnf"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(
                "[client]\n"
                f"host={_option(storage.host)}\n"
                f"port={storage.port}\n"
                f"user={_option(storage.user)}\n"
                f"password={_option(storage.password)}\n"
            )
        yield path


def _tool(*names: str) -> str:
    for name in names:
        if found := shutil.which(name):
            return found
    raise error(N_("%(tool)s is not installed."), tool=names[0])


def mariadb_dump(storage: DbdStorage, target: Path) -> None:
    """slurmdbd's database as SQL, one consistent snapshot without locking slurmdbd out."""
    with _defaults_file(storage) as cnf, target.open("xb") as out:
        argv = [
            _tool("mariadb-dump", "mysqldump"),
            f"--defaults-extra-file={cnf}",  # must come first: the credentials
            "--single-transaction",
            "--quick",
            "--no-tablespaces",
            storage.database,
        ]
        _run(argv, stdout=out)


def mariadb_load(storage: DbdStorage, dump: Path) -> None:
    """The dump into slurmdbd's database (its tables are dropped and made again)."""
    with _defaults_file(storage) as cnf, dump.open("rb") as src:
        argv = [_tool("mariadb", "mysql"), f"--defaults-extra-file={cnf}", storage.database]
        _run(argv, stdin=src)


def systemctl(action: str, unit: str) -> None:
    """Stop or start a unit of a site's systemd (slurmdbd around the load of its database)."""
    _run(["systemctl", action, unit])
