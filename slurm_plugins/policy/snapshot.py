"""The frozen world one policy cycle decides on.

A :class:`Snapshot` holds pending and running jobs, nodes with their cards in use, usage
history, tenant quotas, utilisation samples, the daemon's own bookkeeping and ``now``.
Policies read nothing else, so a cycle can be replayed from a JSON dump
(``--dump-snapshot`` / ``--replay``). :mod:`slurm_plugins.policy.collect` builds one from
the client's models.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gres.naming import DEFAULT_SHARDS_PER_GPU
from gres.placement_model import Workload
from plumbing import codec
from slurm_plugins.node import Sample
from slurm_plugins.policy.resources import Amounts, Demand

SNAPSHOT_VERSION = 1

#: Node flags under which no new work should land and running work should move.
DRAIN_FLAGS = frozenset({"DRAIN", "DRAINING", "DRAINED", "MAINTENANCE", "REBOOT_REQUESTED"})
FAIL_FLAGS = frozenset({"FAIL", "NOT_RESPONDING"})
DEAD_STATES = frozenset({"DOWN", "ERROR", "FUTURE", "UNKNOWN"})


@dataclass(frozen=True, slots=True)
class CardUse:
    """Shards one running job holds on one card; a whole card counts all its shards."""

    node: str
    card: int
    shards: int


@dataclass(frozen=True, slots=True)
class JobInfo:
    job_id: int
    user: str
    account: str
    partition: str
    qos: str
    state: str
    submit: float
    name: str = ""
    reason: str = ""
    held: bool = False
    start: float | None = None
    node_count: int = 1
    demand: Demand = field(default_factory=Demand)
    nodes: tuple[str, ...] = ()
    cards: tuple[CardUse, ...] = ()
    required_nodes: tuple[str, ...] = ()
    excluded_nodes: tuple[str, ...] = ()
    features: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    priority: int = 0
    restart_count: int = 0
    requeue: bool = True
    dependency: str = ""
    #: Waiting (a begin time set by the admission hook) for the placement daemon to pin it
    #: and start it; Slurm starts it by itself once that time comes.
    deferred: bool = False
    amounts: Amounts = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "amounts", self.demand.amounts(max(self.node_count, 1)))

    @property
    def pending(self) -> bool:
        return self.state == "PENDING"

    @property
    def running(self) -> bool:
        return self.state == "RUNNING"

    @property
    def not_yet(self) -> bool:
        """Waiting for its own begin time or a dependency (not for the placement daemon)."""
        if "Dependency" in self.reason:
            return True
        return "BeginTime" in self.reason and not self.deferred

    @property
    def held_by_user(self) -> bool:
        return self.held and self.reason == "JobHeldUser"

    def label(self, key: str) -> str | None:
        return self.labels.get(key)


@dataclass(frozen=True, slots=True)
class NodeInfo:
    name: str
    state: str = "IDLE"
    flags: frozenset[str] = frozenset()
    partitions: tuple[str, ...] = ()
    features: tuple[str, ...] = ()
    weight: int = 1
    reason: str = ""
    cpus: int = 0
    alloc_cpus: int = 0
    mem_mb: int = 0
    alloc_mem_mb: int = 0
    gpu_type: str | None = None
    gpus: int = 0
    shards_per_gpu: int = DEFAULT_SHARDS_PER_GPU
    #: Shards in use per card (a card allocated whole counts ``shards_per_gpu``).
    card_used: tuple[int, ...] = ()
    npus: Mapping[str, int] = field(default_factory=dict)
    npus_used: Mapping[str, int] = field(default_factory=dict)
    #: Cards slurmctld counts as in use (``sinfo``'s GRES_USED indexes); None: as the jobs
    #: say. Slurm 22.05 forgets that a card holds shards as soon as any shard job on it
    #: ends, so this can miss cards that are still shared: slurmctld would give such a
    #: card whole to the next whole-card job (see ``cluster.FreeNode``).
    slurm_busy: tuple[int, ...] | None = None
    #: The leaf switch it hangs off (``topology/tree``); None without switches.
    switch: str | None = None

    @property
    def draining(self) -> bool:
        """Drained or draining, e.g. for maintenance: running work should move away."""
        return bool(self.flags & DRAIN_FLAGS) or self.state in DRAIN_FLAGS

    @property
    def failing(self) -> bool:
        return self.state in DEAD_STATES or bool(self.flags & FAIL_FLAGS)

    @property
    def available(self) -> bool:
        """Up and accepting new work."""
        return not (self.draining or self.failing)


@dataclass(frozen=True, slots=True)
class UsageRecord:
    """Resources one finished job held from ``start`` to ``end`` (epoch seconds)."""

    account: str
    user: str
    start: float
    end: float
    amounts: Amounts


@dataclass(frozen=True, slots=True)
class Tenant:
    """Quota and settings of one tenant (Kueue's ClusterQueue), keyed by Slurm account.

    ``nominal`` is the guarantee per resource; ``borrowing_limit`` caps what it may use
    beyond that (a missing resource: no cap); ``lending_limit`` caps how much of its unused
    nominal quota others in the cohort may borrow (missing: all of it).
    """

    name: str
    accounts: tuple[str, ...] = ()
    cohort: str | None = None
    nominal: Mapping[str, float] = field(default_factory=dict)
    borrowing_limit: Mapping[str, float] = field(default_factory=dict)
    lending_limit: Mapping[str, float] = field(default_factory=dict)
    shares: float = 1.0
    idle_threshold: float | None = None
    idle_period_s: float | None = None

    @property
    def all_accounts(self) -> tuple[str, ...]:
        return self.accounts or (self.name,)


@dataclass(frozen=True, slots=True)
class Mark:
    """A time-stamped note the daemon keeps about a job, with why."""

    since: float
    reason: str = ""


@dataclass(frozen=True, slots=True)
class DaemonState:
    """What the daemon did and must remember across cycles and restarts.

    ``holds`` are holds *we* placed (never a user's); ``site_factors`` what we last set
    (Slurm 22.05 does not print it); ``base_req``/``base_exc`` the node lists a job had
    before we steered it, so steering can be undone; ``base_qos`` a job's own QOS while the
    daemon runs it in another one (capacity's borrowing QOS).
    """

    holds: Mapping[int, Mark] = field(default_factory=dict)
    site_factors: Mapping[int, int] = field(default_factory=dict)
    base_req: Mapping[int, str] = field(default_factory=dict)
    base_exc: Mapping[int, str] = field(default_factory=dict)
    signalled: Mapping[int, Mark] = field(default_factory=dict)
    requeued: Mapping[int, Mark] = field(default_factory=dict)
    warned: Mapping[int, Mark] = field(default_factory=dict)
    released: Mapping[int, Mark] = field(default_factory=dict)
    base_weights: Mapping[str, int] = field(default_factory=dict)
    #: Jobs requeued to defragment -> the node they should run on next.
    targets: Mapping[int, str] = field(default_factory=dict)
    #: Jobs the daemon moved to another QOS -> the QOS they were submitted with.
    base_qos: Mapping[int, str] = field(default_factory=dict)
    #: The task model placement scored against, per family of cards; kept until the mix of
    #: jobs moves (``gres.placement_tasks.settled``).
    task_models: Mapping[str, Workload] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Snapshot:
    now: float
    jobs: tuple[JobInfo, ...] = ()
    nodes: tuple[NodeInfo, ...] = ()
    usage: tuple[UsageRecord, ...] = ()
    tenants: tuple[Tenant, ...] = ()
    #: account -> parent account (from the association tree).
    accounts: Mapping[str, str] = field(default_factory=dict)
    samples: Mapping[int, tuple[Sample, ...]] = field(default_factory=dict)
    state: DaemonState = field(default_factory=DaemonState)
    #: Slurm may take one job's shards from several cards (23.11+ with
    #: MULTIPLE_SHARING_GRES_PJ): it would split a share of one card it places itself.
    shards_across_cards: bool = False
    version: int = SNAPSHOT_VERSION

    def to_json(self) -> str:
        return json.dumps(codec.dump(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Snapshot:
        data: Any = json.loads(text)
        if not isinstance(data, dict) or data.get("version") != SNAPSHOT_VERSION:
            raise codec.CodecError(f"not a version {SNAPSHOT_VERSION} policy snapshot")
        return codec.load(cls, data)

    def dump(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json() + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Snapshot:
        return cls.from_json(Path(path).read_text())
