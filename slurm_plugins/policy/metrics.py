"""The policy daemon's metrics: its cycles, decisions and Slurm writes, and the pool it read.

Counted once per cycle from the cycle's report (the plan and what apply did), so the
daemon itself only hands its report over. The pool families (cards, queues, fragmentation)
are computed at scrape time from the jobs and nodes the last cycle read
(:mod:`slurm_plugins.policy.poolmetrics`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.metrics_core import Metric

from plumbing.metrics import Latest, SnapshotCollector, name, registry_of
from slurm_plugins.policy.base import REGISTRY
from slurm_plugins.policy.plan import Plan
from slurm_plugins.policy.poolmetrics import PoolView, pool_families
from slurm_plugins.policy.snapshot import Tenant

if TYPE_CHECKING:
    from slurm_plugins.policy.apply import ApplyResult

CYCLE_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
#: a decision's policy when its reason names none of the registered ones
ENGINE = "engine"


def policy_of(reason: str) -> str:
    """The policy a reason names (``gang: 3 of 4 …`` -> ``gang``), else ``engine``: the
    label stays within the registered policies."""
    head = reason.split(":", 1)[0].strip()
    return head if head in REGISTRY else ENGINE


def decisions(plan: Plan) -> list[tuple[str, str]]:
    """(policy, kind) of each decision of a plan; kinds: ``priority``, ``pin``,
    ``exclude``, ``qos``, ``start``, ``hold``, ``release``, ``node_weight`` and the
    actions on running jobs (``warn``, ``signal``, ``requeue``, ``requeue_hold``,
    ``cancel``)."""
    out: list[tuple[str, str]] = []
    for c in plan.job_changes:
        p = policy_of(c.reason)
        out += [(p, "priority")] if c.site_factor is not None else []
        out += [(p, "pin")] if c.req_nodes else []
        out += [(p, "exclude")] if c.exc_nodes else []
        out += [(p, "qos")] if c.qos is not None else []
        out += [(p, "start")] if c.start_now else []
    out += [(policy_of(h.reason), "hold") for h in plan.holds]
    out += [(policy_of(h.reason), "release") for h in plan.releases]
    out += [(policy_of(w.reason), "node_weight") for w in plan.node_weights]
    out += [(a.policy if a.policy in REGISTRY else ENGINE, a.action.value) for a in plan.actions]
    return out


class PolicyMetrics:
    """The daemon's registry: counters it updates after each cycle, and the pool view."""

    def __init__(self, cluster: str = "default", tenants: Sequence[Tenant] = ()) -> None:
        self.cluster = cluster
        self._tenant = {a: t.name for t in tenants for a in t.accounts}
        self._view: Latest[PoolView] = Latest()
        self.registry: CollectorRegistry = registry_of([SnapshotCollector(self._pool)])
        reg = self.registry
        self.cycles = Counter(
            name("policy", "cycles"), "Cycles by outcome (ok, failed).", ["outcome"], registry=reg
        )
        self.cycle_seconds = Histogram(
            name("policy", "cycle_seconds"),
            "Time of one cycle: read, plan and apply.",
            buckets=CYCLE_BUCKETS,
            registry=reg,
        )
        self.phase_seconds = Gauge(
            name("policy", "last_cycle_phase_seconds"),
            "Time of each phase (read, plan, apply) of the last cycle.",
            ["phase"],
            registry=reg,
        )
        self.decisions = Counter(
            name("policy", "decisions"),
            "Decisions of the plans by policy and kind (pin, hold, requeue, …).",
            ["policy", "kind"],
            registry=reg,
        )
        self.writes = Counter(
            name("policy", "slurm_writes"), "Slurm write calls made by apply.", registry=reg
        )
        self.failed_jobs = Counter(
            name("policy", "failed_changes"),
            "Jobs a Slurm write failed for (the change is tried again next cycle).",
            registry=reg,
        )
        self.pending = Gauge(
            name("policy", "pending_jobs"), "Pending jobs the last plan ordered.", registry=reg
        )
        self.held = Gauge(name("policy", "held_jobs"), "Jobs the daemon holds now.", registry=reg)
        self.migration_seconds = Histogram(
            name("policy", "migration_seconds"),
            "From a job's requeue by the daemon to its running again.",
            buckets=(5, 15, 30, 60, 120, 180, 300, 600),
            registry=reg,
        )

    def tenant_of(self, account: str) -> str:
        return self._tenant.get(account, account)

    def _pool(self) -> Iterable[Metric]:
        return pool_families(self._view.get(), self.tenant_of)

    def saw(self, view: PoolView) -> None:
        """The jobs and nodes a cycle read (the pool families are computed from them)."""
        self._view.set(view)

    def cycled(
        self,
        plan: Plan,
        result: ApplyResult | None,
        phases: tuple[float, float, float],
        migrations: Iterable[float] = (),
    ) -> None:
        """Count one cycle that ran: its phases' times, its decisions, apply's writes."""
        self.cycles.labels("ok").inc()
        self.cycle_seconds.observe(sum(phases))
        for phase, s in zip(("read", "plan", "apply"), phases, strict=True):
            self.phase_seconds.labels(phase).set(s)
        for policy, kind in decisions(plan):
            self.decisions.labels(policy, kind).inc()
        self.pending.set(len(plan.order))
        if result is not None:
            self.writes.inc(result.calls)
            self.failed_jobs.inc(len(result.failed))
            self.held.set(len(result.state.holds))
        for m in migrations:
            self.migration_seconds.observe(m)

    def failed(self) -> None:
        self.cycles.labels("failed").inc()
