"""The policy plug-in interface: a name, an args schema and up to three hooks.

* ``score(job, ctx) -> float | None`` — how much a pending job should go first, in [0, 1].
  Scores of all policies are combined by their configured weights.
* ``admit(job, ctx, cycle) -> Verdict | None`` — may it start now, and where not. Called in
  queue order; votes are taken tier by tier, the first tier with a vote decides, and any
  ``HOLD`` in that tier wins over ``ADMIT``. Node exclusions of every policy are honoured.
* ``victims(ctx, cycle) -> Iterable[JobAction]`` — running jobs to warn, signal, requeue or
  cancel, after the whole queue has been admitted.

Node ``Weight`` steering is cluster-wide rather than per job, so the placement policy has a
fourth, optional hook ``nodes(ctx, cycle) -> Iterable[NodeWeight]``.
Policies are pure: they read the :class:`Context` and return decisions; they never import
the Slurm client.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Any, ClassVar

from marshmallow import Schema

from gres.placement_model import Workload
from slurm_plugins.policy.cluster import Chooser, ClusterView
from slurm_plugins.policy.plan import JobAction, NodeWeight
from slurm_plugins.policy.resources import ZERO, Amounts
from slurm_plugins.policy.snapshot import JobInfo, NodeInfo, Snapshot, Tenant


class Vote(StrEnum):
    ADMIT = "admit"
    HOLD = "hold"


@dataclass(frozen=True, slots=True)
class Verdict:
    vote: Vote | None = None
    reason: str = ""
    exclude: frozenset[str] = frozenset()
    #: Pin the pending job to these nodes (written as its ReqNodeList).
    pin: tuple[str, ...] = ()
    #: Run the pending job in this QOS (capacity: borrowed work in the preemptible one).
    qos: str | None = None


ABSTAIN = Verdict()


def hold(reason: str) -> Verdict:
    return Verdict(Vote.HOLD, reason)


def admit(reason: str = "", **kw: Any) -> Verdict:
    return Verdict(Vote.ADMIT, reason, **kw)


class EmptySchema(Schema):
    """Args of a policy that takes none."""


class Policy:
    """Base class; subclasses set ``name`` and ``Args`` and override the hooks they use."""

    name: ClassVar[str] = ""
    Args: ClassVar[type[Schema]] = EmptySchema
    #: Admit hooks run in this order within a tier (placement last: it needs exclusions).
    stage: ClassVar[int] = 0

    def __init__(self, **args: Any) -> None:
        self.args = args

    def score(self, job: JobInfo, ctx: Context) -> float | None:
        return None

    def admit(self, job: JobInfo, ctx: Context, cycle: Cycle) -> Verdict | None:
        return None

    def victims(self, ctx: Context, cycle: Cycle) -> Iterable[JobAction]:
        return ()

    def nodes(self, ctx: Context, cycle: Cycle) -> Iterable[NodeWeight]:
        return ()

    def explain(self, job: JobInfo, ctx: Context) -> str:
        """One line on how this policy scored ``job`` (for the portal)."""
        s = self.score(job, ctx)
        return f"{self.name} {s:.2f}" if s is not None else ""

    @classmethod
    def implements(cls, hook: str) -> bool:
        return getattr(cls, hook) is not getattr(Policy, hook)


REGISTRY: dict[str, type[Policy]] = {}


def register(cls: type[Policy]) -> type[Policy]:
    if not cls.name or cls.name in REGISTRY:
        raise ValueError(f"policy name {cls.name!r} is empty or taken")
    REGISTRY[cls.name] = cls
    return cls


#: Labels of jobs submitted held for the daemon to release (a user hold on them is ours):
#: gang and anti-affinity members, and ``admit`` for any job that must not start before the
#: daemon has judged it (Kueue's suspended workloads: its QOS and node list are set first).
DAEMON_RELEASED = ("gang", "anti_affinity", "admit")


@dataclass(frozen=True, slots=True)
class Select:
    """Which jobs the daemon steers (empty fields: all). Others still count as load."""

    partitions: tuple[str, ...] = ()
    accounts: tuple[str, ...] = ()
    name_prefix: str = ""

    def matches(self, job: JobInfo) -> bool:
        if self.partitions and not set(job.partition.split(",")) & set(self.partitions):
            return False
        if self.accounts and job.account not in self.accounts:
            return False
        return job.name.startswith(self.name_prefix)


def released_by_daemon(job: JobInfo) -> bool:
    return any(label in job.labels for label in DAEMON_RELEASED)


class Context:
    """Read-only views of the snapshot that several policies need, computed once.

    ``pending`` are the steered pending jobs; ``movable`` the steered running jobs (the only
    ones a policy may signal, requeue or cancel); ``running`` all running jobs (load).
    """

    def __init__(self, snapshot: Snapshot, *, select: Select | None = None) -> None:
        self.snapshot = snapshot
        self.now = snapshot.now
        self.state = snapshot.state
        sel = select or Select()
        self.select = sel
        self.jobs = {j.job_id: j for j in snapshot.jobs}
        self.nodes: dict[str, NodeInfo] = {n.name: n for n in snapshot.nodes}
        self.running = [j for j in snapshot.jobs if j.running]
        self.movable = [j for j in self.running if sel.matches(j)]
        ours = snapshot.state.holds
        self.pending = [
            j
            for j in snapshot.jobs
            if j.pending
            and sel.matches(j)
            and (not j.held_by_user or released_by_daemon(j) or j.job_id in ours)
        ]
        self._tenant_of_account = {a: t for t in snapshot.tenants for a in t.all_accounts}
        self.tenants = {t.name: t for t in snapshot.tenants}
        self._tenant_cache: dict[str, Tenant | None] = {}

    def tenant(self, job: JobInfo) -> Tenant | None:
        """The tenant of a job: its account's, else the nearest ancestor account's."""
        return self.tenant_of(job.account)

    def tenant_of(self, account: str) -> Tenant | None:
        if account in self._tenant_cache:
            return self._tenant_cache[account]
        found, cur, hops = None, account, 0
        while cur and hops < 16:
            found = self._tenant_of_account.get(cur)
            if found is not None:
                break
            cur = self.snapshot.accounts.get(cur, "")
            hops += 1
        self._tenant_cache[account] = found
        return found

    def qos_class(self, job: JobInfo) -> str:
        """The job's own QOS (its priority class), even while the daemon has moved it."""
        return self.state.base_qos.get(job.job_id, job.qos)

    @cached_property
    def tenant_usage(self) -> Mapping[str, Amounts]:
        """Resources running jobs hold now, per tenant."""
        out: dict[str, Amounts] = {}
        for j in self.running:
            t = self.tenant(j)
            if t is not None:
                out[t.name] = out.get(t.name, ZERO) + j.amounts
        return out

    @cached_property
    def capacity(self) -> Amounts:
        """Total resources of the nodes that take work."""
        total = ZERO
        for n in self.snapshot.nodes:
            if not n.failing:
                total = total + Amounts(
                    float(n.gpus), float(sum(n.npus.values())), float(n.cpus), n.mem_mb / 1024
                )
        return total


@dataclass
class Cycle:
    """Mutable scratch space of one plan: the cluster view and what was decided so far."""

    view: ClusterView
    chooser: Chooser
    #: pending job id -> exclusions policies asked for so far this cycle
    exclude: dict[int, frozenset[str]] = field(default_factory=dict)
    admitted: dict[int, bool] = field(default_factory=dict)
    memo: dict[str, Any] = field(default_factory=dict)
    wake: list[float] = field(default_factory=list)
    #: The task models placement used, per family (kept in the daemon's state).
    task_models: dict[str, Workload] = field(default_factory=dict)
