"""Host-side chores of the lab: private files, fake devices, demo users, munge and MariaDB.

These run ordinary system tools (never Slurm commands) with argv lists, as root.
"""

from __future__ import annotations

import functools
import grp
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

from aipool.lab.config import LabConfig
from aipool.lab.daemons import LabError
from gres.inventory import Inventory

MUNGE_SOCKET = Path("/run/munge/munge.socket.2")


def write_private(path: Path, content: str | bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(content.encode() if isinstance(content, str) else content)


_ACCEL_MAJOR = {"mlu": 240, "dcu": 241, "xpu": 242}


def make_fake_devices(inv: Inventory) -> None:
    """Character devices that look like /dev/nvidiaN, /dev/davinciN, /dev/cambricon_devN,
    /dev/dri/renderDN and /dev/xpuN to slurmd. MLU, DCU and XPU files take majors from the
    range Linux keeps for local use (240-254), so none is a real device of this host."""
    seen: set[str] = set()
    for node in inv.nodes:
        devices = [(g.device, 195, g.index) for g in node.gpus]
        devices += [(n.device, 236, n.index) for n in node.npus]
        devices += [(v.device, 237, v.vnpu_id) for v in node.vnpus]
        devices += [(a.device, _ACCEL_MAJOR[a.kind], a.index) for a in node.accels]
        for path, major, minor in devices:
            if path in seen:
                continue
            seen.add(path)
            p = Path(path)
            if p.exists() and stat.S_ISCHR(p.stat().st_mode):
                continue
            p.unlink(missing_ok=True)
            os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(major, minor))


def munge_works() -> bool:
    if not MUNGE_SOCKET.exists():
        return False
    cred = subprocess.run(["munge", "-n"], capture_output=True, check=False)
    if cred.returncode != 0:
        return False
    ok = subprocess.run(["unmunge"], input=cred.stdout, capture_output=True, check=False)
    return ok.returncode == 0


def ensure_unix_users(names: tuple[str, ...]) -> list[str]:
    """Create missing demo users (with a home, so jobs can start there); return those made."""
    created = []
    for name in names:
        if subprocess.run(["id", "-u", name], capture_output=True, check=False).returncode == 0:
            continue
        subprocess.run(
            ["useradd", "--create-home", "--shell", "/bin/bash", name],
            check=True,
            capture_output=True,
        )
        created.append(name)
    return created


SERVICE_USER = "aipool"  # AIPool's services' account, and the group that reads users' job files


def ensure_service_account(name: str = SERVICE_USER) -> bool:
    """The system user and group ``name`` (no home, no login shell); True if made now."""
    if subprocess.run(["id", "-u", name], capture_output=True, check=False).returncode == 0:
        return False
    group_exists = subprocess.run(["getent", "group", name], capture_output=True, check=False)
    group = ["--gid", name] if group_exists.returncode == 0 else ["--user-group"]
    argv = ["useradd", "--system", *group, "--no-create-home", "--shell", "/usr/sbin/nologin"]
    subprocess.run([*argv, name], check=True, capture_output=True)
    return True


def share_with_service(path: Path, name: str = SERVICE_USER) -> None:
    """``path`` stays root's, and only the service's group may also read it (mode 0640)."""
    os.chown(path, 0, grp.getgrnam(name).gr_gid)
    path.chmod(0o640)


#: the token service's account: the JWT key's one reader but Slurm
TOKEN_USER = "aipool-token"  # noqa: S105 -- an account name


def give_key_to_token_service(path: Path, name: str = TOKEN_USER) -> None:
    """The JWT key stays root's (the lab's SlurmUser) and only the token service's own group
    may also read it (0640): not the service user ``aipool``, not its group."""
    ensure_service_account(name)
    os.chown(path, 0, grp.getgrnam(name).gr_gid)
    path.chmod(0o640)


def token_socket(cfg: LabConfig) -> Path:
    """The token service's socket, in a directory only the service user's group may enter."""
    return cfg.run / TOKEN_USER / "tokens.sock"


def make_service_dir(path: Path, mode: int = 0o700, name: str = SERVICE_USER) -> Path:
    """A directory of the service user's (made if missing), with ``mode``."""
    path.mkdir(parents=True, exist_ok=True)
    shutil.chown(path, name, name)
    path.chmod(mode)
    return path


#: slurmdbd's database holds job, account and user names in any script
DB_CHARSET = "utf8mb4"
DB_COLLATION = "utf8mb4_unicode_ci"


def install_mariadb_datadir(cfg: LabConfig) -> None:
    """A private MariaDB datadir under the lab root (the host's /var/lib/mysql is untouched)."""
    datadir = cfg.mysql / "data"
    if (datadir / "mysql").exists():
        return
    subprocess.run(
        [
            "mariadb-install-db",
            "--user=mysql",
            f"--datadir={datadir}",
            "--auth-root-authentication-method=socket",
            "--skip-test-db",
        ],
        check=True,
        capture_output=True,
    )


def mariadbd_argv(cfg: LabConfig) -> list[str]:
    return [
        "mariadbd",
        "--no-defaults",
        "--user=mysql",
        f"--datadir={cfg.mysql / 'data'}",
        f"--bind-address={cfg.address}",
        f"--port={cfg.ports.mariadb}",
        f"--socket={cfg.mysql_socket}",
        f"--pid-file={cfg.mysql / 'mariadb.pid'}",
        f"--log-error={cfg.mysql / 'mariadb.err'}",
        "--skip-log-bin",
        # slurmdbd creates its tables in the database's character set: names in any script
        f"--character-set-server={DB_CHARSET}",
        f"--collation-server={DB_COLLATION}",
        "--innodb-buffer-pool-size=256M",
        "--innodb-lock-wait-timeout=900",
    ]


def mariadb_answers(cfg: LabConfig) -> bool:
    done = subprocess.run(
        ["mariadb-admin", f"--socket={cfg.mysql_socket}", "-u", "root", "ping"],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def create_slurm_database(cfg: LabConfig, password: str) -> None:
    """slurmdbd's database and user (the password is generated hex, never user text), in
    UTF-8 (utf8mb4): slurmdbd makes its tables in the database's character set, and one of
    an earlier lab is converted here, before slurmdbd starts (docs/lab.md)."""
    if not password.isalnum():
        raise ValueError("the lab's database password must be alphanumeric")
    charset = f"CHARACTER SET {DB_CHARSET} COLLATE {DB_COLLATION}"
    statements = (
        f"CREATE DATABASE IF NOT EXISTS {cfg.db_name} {charset};"
        f"ALTER DATABASE {cfg.db_name} {charset};"
        f"CREATE USER IF NOT EXISTS '{cfg.db_user}'@'{cfg.address}' IDENTIFIED BY '{password}';"
        f"CREATE USER IF NOT EXISTS '{cfg.db_user}'@'localhost' IDENTIFIED BY '{password}';"
        f"GRANT ALL ON {cfg.db_name}.* TO '{cfg.db_user}'@'{cfg.address}';"
        f"GRANT ALL ON {cfg.db_name}.* TO '{cfg.db_user}'@'localhost';"
    )
    subprocess.run(
        ["mariadb", f"--socket={cfg.mysql_socket}", "-u", "root"],
        input=statements,
        text=True,
        check=True,
        capture_output=True,
    )
    _convert_tables(cfg, charset)


def _convert_tables(cfg: LabConfig, charset: str) -> None:
    """Tables of an earlier lab in another character set converted to ``charset``."""
    # the lab's own database name and character set, never user text
    query = "SELECT table_name FROM information_schema.tables"
    query += f" WHERE table_schema = '{cfg.db_name}'"
    query += f" AND table_collation NOT LIKE '{DB_CHARSET}%'"
    found = subprocess.run(
        ["mariadb", f"--socket={cfg.mysql_socket}", "-u", "root", "-N", "-B", "-e", query],
        text=True,
        check=True,
        capture_output=True,
    )
    # slurmdbd's own table names: letters, digits and '_'
    tables = [t for t in found.stdout.split() if t.isascii() and t.replace("_", "").isalnum()]
    if tables:
        subprocess.run(
            ["mariadb", f"--socket={cfg.mysql_socket}", "-u", "root", cfg.db_name],
            input="".join(f"ALTER TABLE `{t}` CONVERT TO {charset};" for t in tables),
            text=True,
            check=True,
            capture_output=True,
        )


def install_sudoers(target: Path, program: Path) -> None:
    """A sudoers rule letting the service user run ``program`` as root (which checks its own
    arguments), written only once ``visudo`` accepts it."""
    tmp = target.with_name(f".{target.name}.new")  # sudo skips it while we check it
    # no pseudo-terminal: the as-the-user agent's streams pass through sudo as plain pipes
    tmp.write_text(f"Defaults!{program} !use_pty\n{SERVICE_USER} ALL=(root) NOPASSWD: {program}\n")
    tmp.chmod(0o440)
    checked = subprocess.run(["visudo", "-cf", str(tmp)], check=False, capture_output=True)
    if checked.returncode != 0:
        tmp.unlink()
        raise LabError(f"the lab's sudoers rule for {program} does not parse: {checked.stdout!r}")
    tmp.replace(target)


@functools.cache
def slurm_release() -> tuple[int, int]:
    """(major, minor) of this host's Slurm, from ``slurmd -V`` (``slurm-wlm 24.11.5``): the
    lab renders its files for it before any exist, and 23.11+'s client commands (``sinfo
    --version`` too) will not run without a configuration to read."""
    done = subprocess.run(["slurmd", "-V"], capture_output=True, text=True, check=False)
    match = re.search(r"(\d+)\.(\d+)\.\d+", done.stdout)
    if match is None:
        raise LabError(f"slurmd -V: cannot tell the Slurm release from {done.stdout!r}")
    return int(match[1]), int(match[2])
