"""The job spec as frozen data: what the schema builds and what the renderer reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction

from gres.catalogue import Precision


class Priority(StrEnum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"

    @property
    def qos(self) -> str:
        """The Slurm QOS of the class (``medium`` is Slurm's ``normal``)."""
        return _QOS[self]


_QOS = {Priority.HIGH: "high", Priority.MEDIUM: "normal", Priority.LOW: "low"}


class TopologyKind(StrEnum):
    SINGLE = "single"
    MULTI_GPU = "multi_gpu"
    DDP = "ddp"
    MPI = "mpi"
    PS_WORKER = "ps_worker"
    MASTER_WORKER = "master_worker"
    SCHEDULER_SERVER_WORKER = "scheduler_server_worker"

    @property
    def roles(self) -> tuple[str, ...]:
        """Role names of a heterogeneous topology, in component order; empty otherwise."""
        return ROLES.get(self, ())

    @property
    def heterogeneous(self) -> bool:
        return bool(self.roles)


ROLES: Mapping[TopologyKind, tuple[str, ...]] = {
    TopologyKind.PS_WORKER: ("ps", "worker"),
    TopologyKind.MASTER_WORKER: ("master", "worker"),
    TopologyKind.SCHEDULER_SERVER_WORKER: ("scheduler", "server", "worker"),
}
# Roles that must have exactly one replica.
SINGLETON_ROLES = frozenset({"master", "scheduler"})


class MountKind(StrEnum):
    DATA = "data"
    MODEL = "model"


class MountMode(StrEnum):
    RO = "ro"
    RW = "rw"


class DependencyType(StrEnum):
    AFTEROK = "afterok"
    AFTERANY = "afterany"
    AFTERNOTOK = "afternotok"


class MailEvent(StrEnum):
    BEGIN = "begin"
    END = "end"
    FAIL = "fail"
    REQUEUE = "requeue"
    TIME_LIMIT = "time_limit"
    ALL = "all"


class JupyterApp(StrEnum):
    LAB = "lab"
    NOTEBOOK = "notebook"
    SERVER = "server"


@dataclass(frozen=True, slots=True)
class Resources:
    """What one node (or one replica of a role) asks for.

    ``gpus`` is a whole number of cards per node, or a share of cards that is not whole (a
    multiple of 1/32, given to Slurm as shards): below one card on every release, above one
    card (``1.25``: shards from several cards) where Slurm allows it (23.11+).
    """

    gpus: Fraction = Fraction(0)
    gpu_type: str | None = None
    npus: int = 0
    npu_type: str | None = None
    #: MLU, DCU or XPU cards per node: the GRES name (``mlu``), count and type
    accel_kind: str | None = None
    accels: int = 0
    accel_type: str | None = None
    cpus: int | None = None
    memory_mb: int | None = None
    nodes: int = 1
    tasks_per_node: int | None = None
    time_min: int | None = None
    #: The precision the job computes in: only cards that run it natively (the catalogue).
    precision: Precision | None = None
    #: The least dense TFLOPS (TOPS for int8) at ``precision`` a card must offer.
    min_score: float | None = None

    @property
    def whole_gpus(self) -> int:
        return int(self.gpus) if self.gpus.denominator == 1 else 0

    @property
    def gpu_fraction(self) -> Fraction | None:
        """The share of cards given as shards (``1/4``, ``5/4``), or None for whole cards or
        no GPU."""
        return self.gpus if self.gpus.denominator != 1 else None

    @property
    def shares_across_cards(self) -> bool:
        """Whether the share is above one card and not whole: shards from several cards."""
        return self.gpus > 1 and self.gpus.denominator != 1

    @property
    def devices(self) -> int:
        """Whole accelerator cards per node (GPUs, NPUs, MLUs, DCUs or XPUs)."""
        return self.whole_gpus or self.npus or self.accels

    @property
    def processes_per_node(self) -> int:
        """Processes a launcher starts per node: as asked, else one per card, else one."""
        return self.tasks_per_node or self.devices or 1


@dataclass(frozen=True, slots=True)
class Role:
    """One role of a heterogeneous topology; each replica gets a node allocation of its own."""

    name: str
    replicas: int
    resources: Resources
    command: tuple[str, ...] = ()
    partition: str | None = None


@dataclass(frozen=True, slots=True)
class Topology:
    kind: TopologyKind = TopologyKind.SINGLE
    roles: tuple[Role, ...] = ()

    def role(self, name: str) -> Role:
        for r in self.roles:
            if r.name == name:
                return r
        raise KeyError(name)


@dataclass(frozen=True, slots=True)
class Mount:
    """A data set or model the job reads (or writes), given to it as ``AIPOOL_<KIND>_<NAME>``."""

    name: str
    path: str
    kind: MountKind = MountKind.DATA
    mode: MountMode = MountMode.RO

    @property
    def env_name(self) -> str:
        return f"AIPOOL_{self.kind.value.upper()}_{env_suffix(self.name)}"


def env_suffix(name: str) -> str:
    """``imagenet-1k`` → ``IMAGENET_1K``."""
    return "".join(c if c.isalnum() else "_" for c in name).upper()


@dataclass(frozen=True, slots=True)
class RestartPolicy:
    """``None`` leaves the cluster's default (requeue allowed, no limit)."""

    max_restarts: int | None = None
    on_node_failure: bool | None = None
    on_failure: bool = False

    @property
    def requeue(self) -> bool | None:
        """sbatch ``--requeue`` (True), ``--no-requeue`` (False) or neither (None)."""
        return True if self.on_failure else self.on_node_failure


@dataclass(frozen=True, slots=True)
class Dependency:
    """``on`` is a job id (int) or the name of another spec of the same submission."""

    type: DependencyType
    on: int | str


@dataclass(frozen=True, slots=True)
class Affinity:
    features: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    anti_affinity_group: str | None = None
    #: Keep the job's nodes under one leaf switch (``--switches=1``), waiting at most
    #: ``max_wait_min`` minutes for such a set (None: the cluster's ``max_switch_wait``).
    same_switch: bool = False
    max_wait_min: int | None = None


@dataclass(frozen=True, slots=True)
class Notify:
    email: str
    events: tuple[MailEvent, ...] = (MailEvent.END, MailEvent.FAIL)


@dataclass(frozen=True, slots=True)
class Jupyter:
    app: JupyterApp = JupyterApp.LAB


@dataclass(frozen=True, slots=True)
class Spec:
    """A validated job spec. Build it with :func:`jobspec.schema.load_spec`, never by hand."""

    name: str
    command: tuple[str, ...] = ()
    script: str | None = None
    project: str | None = None
    partition: str | None = None
    resources: Resources = field(default_factory=Resources)
    priority: Priority = Priority.MEDIUM
    topology: Topology = field(default_factory=Topology)
    env: Mapping[str, str] = field(default_factory=dict)
    workdir: str | None = None
    outputs: str | None = None
    conda: str | None = None
    modules: tuple[str, ...] = ()
    mounts: tuple[Mount, ...] = ()
    restart: RestartPolicy = field(default_factory=RestartPolicy)
    dependencies: tuple[Dependency, ...] = ()
    affinity: Affinity = field(default_factory=Affinity)
    notify: Notify | None = None
    jupyter: Jupyter | None = None

    @property
    def spec_dependencies(self) -> tuple[str, ...]:
        """Names of other specs of the same submission this one waits for."""
        return tuple(d.on for d in self.dependencies if isinstance(d.on, str))
