"""What the lab needs from the host, and how to get it when it is missing."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from aipool.lab.daemons import LabError

# binary -> Debian package that ships it
REQUIRED: dict[str, str] = {
    "munged": "munge",
    "munge": "munge",
    "mariadbd": "mariadb-server",
    "mariadb-install-db": "mariadb-server",
    "mariadb": "mariadb-client",
    "mariadb-admin": "mariadb-client",
    "slurmdbd": "slurmdbd",
    "slurmctld": "slurmctld",
    "slurmd": "slurmd",
    "slurmrestd": "slurmrestd",
    "sbatch": "slurm-client",
    "sacctmgr": "slurm-client",
    "scontrol": "slurm-client",
    "setpriv": "util-linux",
    "unshare": "util-linux",  # backup controllers (--controllers) in their own UTS namespace
    "mount": "mount",
    "useradd": "passwd",
    "setfacl": "acl",  # datasets' readers (portal/datasets/unix.py)
    "sudo": "sudo",  # the services (as aipool) run the root helper through it
    "visudo": "sudo",
    "mknod": "coreutils",
}
SEARCH_PATH = os.pathsep.join(
    [os.environ.get("PATH", ""), "/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/bin", "/bin"]
)


@dataclass(frozen=True, slots=True)
class Missing:
    binary: str
    package: str


def missing_binaries(path: str = SEARCH_PATH) -> list[Missing]:
    return [Missing(b, p) for b, p in REQUIRED.items() if shutil.which(b, path=path) is None]


def check(*, euid: int | None = None, path: str = SEARCH_PATH) -> None:
    """Raise a ``LabError`` naming every missing package and the command that installs it."""
    euid = os.geteuid() if euid is None else euid
    if euid != 0:
        raise LabError("the lab cluster runs Slurm daemons and creates demo users: run it as root")
    missing = missing_binaries(path)
    if missing:
        pkgs = sorted({m.package for m in missing})
        names = ", ".join(f"{m.binary} ({m.package})" for m in missing)
        raise LabError(
            f"missing on this machine: {names}\n"
            f"install with: apt-get update && apt-get install -y {' '.join(pkgs)}"
        )


def check_runtime(runtime: Path) -> None:
    """The job runtime must be installed where every user can run it (jobs run as users)."""
    python = runtime / "bin" / "python"
    if not os.access(python, os.X_OK):
        raise LabError(
            f"the job runtime is not installed at {runtime}: run scripts/bootstrap.sh "
            f"(or scripts/install-runtime.sh {runtime})"
        )
    for path in [*reversed(runtime.parents), runtime]:
        mode = path.stat().st_mode
        if not mode & 0o001:
            raise LabError(
                f"the job runtime at {runtime} is not open to every user: {path} has mode "
                f"{mode & 0o777:o}; jobs run as the users (chmod o+rx {path})"
            )
