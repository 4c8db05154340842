"""Where the lab cluster lives and which ports it uses.

Everything the lab writes is under one root directory (default ``/tmp/aipool-lab``), so
``aipool lab down`` can wipe it without touching anything else on the host.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import gres

DEFAULT_ROOT = Path("/tmp/aipool-lab")
PACKAGE_DIR = Path(__file__).resolve().parent
DEFAULT_INVENTORY = Path(gres.__file__).resolve().parent / "examples" / "lab.yaml"
DEFAULT_TENANTS = PACKAGE_DIR / "tenants.yaml"


@dataclass(frozen=True, slots=True)
class LabPorts:
    """TCP ports on 127.0.0.1; a second lab cluster only needs a different set."""

    slurmctld: int = 6817
    slurmdbd: int = 6819
    slurmrestd: int = 6820
    slurmd_base: int = 17001
    mariadb: int = 13306

    def shifted(self, offset: int) -> LabPorts:
        """Every port moved by ``offset``: a second lab on the same host."""
        return LabPorts(*(getattr(self, f) + offset for f in self.__dataclass_fields__))


@dataclass(frozen=True, slots=True)
class LabConfig:
    """Everything that identifies one lab cluster on this host."""

    root: Path = DEFAULT_ROOT
    cluster: str = "aipool"
    ports: LabPorts = field(default_factory=LabPorts)
    inventory: Path = DEFAULT_INVENTORY
    tenants: Path = DEFAULT_TENANTS
    db_name: str = "slurm_acct_db"
    db_user: str = "slurm"
    rest_user: str = "slurm"
    address: str = "127.0.0.1"

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> LabConfig:
        """Defaults, overridden by ``AIPOOL_LAB_*`` variables (parsed once, at the edge)."""
        env = dict(os.environ) if env is None else env
        cfg = cls()
        if root := env.get("AIPOOL_LAB_DIR"):
            cfg = replace(cfg, root=Path(root))
        if name := env.get("AIPOOL_LAB_CLUSTER"):
            cfg = replace(cfg, cluster=name)
        if inv := env.get("AIPOOL_LAB_INVENTORY"):
            cfg = replace(cfg, inventory=Path(inv))
        if offset := env.get("AIPOOL_LAB_PORT_OFFSET"):
            cfg = replace(cfg, ports=cfg.ports.shifted(_int(offset, "AIPOOL_LAB_PORT_OFFSET")))
        return cfg

    # Paths -----------------------------------------------------------------------------
    @property
    def etc(self) -> Path:
        return self.root / "etc"

    @property
    def slurm_conf(self) -> Path:
        return self.etc / "slurm.conf"

    @property
    def jwt_key(self) -> Path:
        return self.etc / "jwt_hs256.key"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def spool(self) -> Path:
        return self.root / "spool"

    @property
    def log(self) -> Path:
        return self.root / "log"

    @property
    def run(self) -> Path:
        return self.root / "run"

    @property
    def dev(self) -> Path:
        return self.root / "dev"

    @property
    def jobs(self) -> Path:
        """World-writable (sticky) directory where demo users' jobs write their output."""
        return self.root / "jobs"

    @property
    def mysql(self) -> Path:
        return self.root / "mysql"

    @property
    def mysql_socket(self) -> Path:
        return self.mysql / "mysqld.sock"

    @property
    def ledger(self) -> Path:
        """JSON record of what ``lab up`` started, so ``down`` stops only that."""
        return self.root / "lab.json"

    @property
    def rest_url(self) -> str:
        return f"http://{self.address}:{self.ports.slurmrestd}"

    def env(self) -> dict[str, str]:
        """Environment a Slurm client needs to talk to this lab."""
        return {"SLURM_CONF": str(self.slurm_conf)}


def _int(value: str, name: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name} must be an integer, not {value!r}") from None
