"""Where the lab cluster lives and which ports it uses.

Everything the lab writes is under one root directory (default ``/tmp/aipool-lab``), so
``aipool lab down`` can wipe it without touching anything else on the host.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import gres
from slurm_plugins.admission.render import ADMISSION_SUBDIR

DEFAULT_ROOT = Path("/tmp/aipool-lab")
PACKAGE_DIR = Path(__file__).resolve().parent
DEFAULT_INVENTORY = Path(gres.__file__).resolve().parent / "examples" / "lab.yaml"
DEFAULT_TENANTS = PACKAGE_DIR / "tenants.yaml"
MEMBER_INVENTORY = PACKAGE_DIR / "cluster2.yaml"
#: The lab of MLU, DCU and XPU cards: a node of each kind's fake devices in the ``accel``
#: partition (``AIPOOL_LAB_INVENTORY``, or a test's side lab).
ACCEL_INVENTORY = PACKAGE_DIR / "accel.yaml"
#: The lab with elastic nodes: power-saved GPU and NPU nodes beside always-up ones
#: (``AIPOOL_LAB_ELASTIC=1``, or a test's side lab), and their power configuration.
ELASTIC_INVENTORY = PACKAGE_DIR / "elastic.yaml"
ELASTIC_POWER = PACKAGE_DIR / "elastic-power.yaml"
# The job runtime (scripts/install-runtime.sh): what every user's jobs run, readable by all
DEFAULT_RUNTIME = Path("/opt/aipool/runtime")
# Every further cluster of a multi-cluster lab moves its ports by this much (so two clusters of
# a lab at offset N stay inside N..N+99, clear of a lab at offset N+100).
CLUSTER_PORT_SHIFT = 30
MAX_CLUSTERS = 3
MAX_CONTROLLERS = 3
# Backup controllers listen on their own loopback addresses: 127.0.2.1, 127.0.2.2, ...
CONTROLLER_NET = "127.0.2"


@dataclass(frozen=True, slots=True)
class LabPorts:
    """TCP ports on 127.0.0.1; a second lab cluster only needs a different set."""

    slurmctld: int = 6817
    slurmdbd: int = 6819
    slurmrestd: int = 6820
    slurmd_base: int = 17001
    mariadb: int = 13306
    # /metrics of the AIPool services (aipool/lab/metrics.py): the policy daemon's, the
    # health checker's, the accounting import's, and one per node agent from the base on, in
    # the inventory's order
    policy_metrics: int = 9101
    health_metrics: int = 9103
    accounting_metrics: int = 9104
    agent_metrics_base: int = 9111
    # the portal of `aipool lab services up`
    portal: int = 8080

    def shifted(self, offset: int) -> LabPorts:
        """Every port moved by ``offset``: a second lab on the same host."""
        return LabPorts(*(getattr(self, f) + offset for f in self.__dataclass_fields__))

    @property
    def offset(self) -> int:
        """How far these ports lie from the defaults (``AIPOOL_LAB_PORT_OFFSET``)."""
        return self.slurmctld - LabPorts().slurmctld


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
    # >1: primary plus backup slurmctld (SlurmctldHost lines), each in its own UTS namespace
    controllers: int = 1
    # seconds without the primary before a backup takes over (Slurm's default is 120)
    ctld_timeout: int = 5
    runtime: Path = DEFAULT_RUNTIME
    # elastic nodes (Slurm's power saving through `aipool power`): their configuration, or
    # None for a lab whose nodes are all always up (the default)
    power: Path | None = None

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
        if runtime := env.get("AIPOOL_RUNTIME"):
            cfg = replace(cfg, runtime=Path(runtime))
        if env.get("AIPOOL_LAB_ELASTIC", "") not in ("", "0"):
            cfg = cfg.elastic()
        if power := env.get("AIPOOL_LAB_POWER"):
            cfg = replace(cfg, power=Path(power))
        if ctl := env.get("AIPOOL_LAB_CONTROLLERS"):
            cfg = cfg.with_controllers(_int(ctl, "AIPOOL_LAB_CONTROLLERS"))
        return cfg

    def elastic(self) -> LabConfig:
        """This lab with the elastic nodes' inventory and power configuration."""
        return replace(self, inventory=ELASTIC_INVENTORY, power=ELASTIC_POWER)

    def with_controllers(self, count: int) -> LabConfig:
        """This lab with ``count`` slurmctld (1 = no backup)."""
        if not 1 <= count <= MAX_CONTROLLERS:
            raise ValueError(f"controllers must be 1..{MAX_CONTROLLERS}, not {count}")
        return replace(self, controllers=count)

    def member(self, index: int) -> LabConfig:
        """Cluster number ``index`` (2, 3, ...) of a multi-cluster lab.

        It has its own name, directory, nodes and slurmctld/slurmd/slurmrestd ports, and
        shares this cluster's slurmdbd (and so its MariaDB): one accounting database for all.
        """
        if not 2 <= index <= MAX_CLUSTERS:
            raise ValueError(f"cluster index must be 2..{MAX_CLUSTERS}, not {index}")
        shift = CLUSTER_PORT_SHIFT * (index - 1)
        moved = self.ports.shifted(shift)
        ports = replace(moved, slurmdbd=self.ports.slurmdbd, mariadb=self.ports.mariadb)
        return replace(
            self,
            root=self.root / "clusters" / f"{self.cluster}{index}",
            cluster=f"{self.cluster}{index}",
            ports=ports,
            inventory=MEMBER_INVENTORY,
            controllers=1,
            power=None,
        )

    @property
    def controller_hosts(self) -> list[tuple[str, str]]:
        """``(name, address)`` of every slurmctld, primary first (``SlurmctldHost`` lines)."""
        if self.controllers == 1:
            return [("localhost", self.address)]
        return [
            (f"{self.cluster}-ctl{i}", f"{CONTROLLER_NET}.{i}")
            for i in range(1, self.controllers + 1)
        ]

    # Paths -----------------------------------------------------------------------------
    @property
    def etc(self) -> Path:
        return self.root / "etc"

    @property
    def slurm_conf(self) -> Path:
        return self.etc / "slurm.conf"

    @property
    def root_helper(self) -> Path:
        """The root helper as the lab installs it (``aipool lab services up``)."""
        return self.root / "sbin" / "aipool-helper"

    @property
    def sudoers_file(self) -> Path:
        """The sudoers rule that lets the service user run the root helper (sudo skips names
        with a dot, so the cluster's name is joined by a dash; a lab in another directory
        has its own rule, or two labs on one host would take each other's helper away)."""
        return Path("/etc/sudoers.d") / f"aipool-lab-{self.cluster}{self._root_tag}"

    @property
    def _root_tag(self) -> str:
        if self.root == DEFAULT_ROOT:
            return ""
        return "-" + hashlib.sha256(str(self.root).encode()).hexdigest()[:10]

    @property
    def power_helper(self) -> Path:
        """The lab's starter of power-saved nodes' slurmd (root's; run through sudo)."""
        return self.root / "sbin" / "aipool-lab-power"

    @property
    def power_sudoers(self) -> Path:
        """The sudoers rule that lets the service user run the starter, and nothing else."""
        return Path("/etc/sudoers.d") / f"aipool-lab-{self.cluster}{self._root_tag}-power"

    @property
    def power_dir(self) -> Path:
        """The power programs' own directory (the service user's): the event log."""
        return self.root / "power"

    @property
    def power_refuse(self) -> Path:
        """Nodes listed here (one a line) do not power on: a lab's broken BMC."""
        return self.root / "power-refuse"

    @property
    def admission(self) -> Path:
        """The admission table's directory: the portal's to write (the hook stays in etc)."""
        return self.etc / ADMISSION_SUBDIR

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
    def clusters_dir(self) -> Path:
        """Where the further clusters of a multi-cluster lab live."""
        return self.root / "clusters"

    @property
    def ctld_run(self) -> Path:
        """A controller's own run directory (bind-mounted per controller when there are backups)."""
        return self.run / "ctld" if self.controllers > 1 else self.run

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
        """Environment a Slurm client needs to talk to this lab; ``sbatch`` and ``srun``
        create a job's output with ``SLURM_UMASK``: the lab's users share one job directory,
        so their outputs are their own (0600), whatever their shell's umask."""
        return {"SLURM_CONF": str(self.slurm_conf), "SLURM_UMASK": "0077"}


def _int(value: str, name: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name} must be an integer, not {value!r}") from None
