"""The policy daemon's side of the queue simulation: snapshot in, real plan, plan applied.

:class:`Daemon` is called by :class:`sim.queue.QueueSim` once per cycle. It describes the
virtual cluster as the daemon's collector describes a real one (jobs with their demand,
nodes with cards in use, finished usage, tenants), runs
:func:`slurm_plugins.policy.engine.plan` unchanged, and does what
:mod:`slurm_plugins.policy.apply` would ask of Slurm.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from gres.hostlist import expand_hostlist
from gres.naming import DEFAULT_SHARDS_PER_GPU
from sim.queue import QueueSim, SimJob
from slurm_plugins.policy.engine import EngineConfig, PolicyConfig, build_policies, plan
from slurm_plugins.policy.plan import Action
from slurm_plugins.policy.resources import Demand
from slurm_plugins.policy.snapshot import (
    CardUse,
    DaemonState,
    JobInfo,
    Mark,
    NodeInfo,
    Snapshot,
    Tenant,
    UsageRecord,
)

PARTITION = "gpu"


class Daemon:
    """Runs the engine with ``policies`` each cycle and applies what it plans."""

    def __init__(
        self,
        policies: Sequence[PolicyConfig],
        tenants: Sequence[Tenant] = (),
        *,
        hold_new: bool = False,
        lookahead: int = 300,
    ) -> None:
        self.config = EngineConfig(policies=tuple(policies), lookahead=lookahead)
        self.policies = build_policies(self.config)
        self.tenants = tuple(tenants)
        self.hold_new = hold_new
        self.state = DaemonState()
        self.usage: list[UsageRecord] = []
        self._recorded = 0
        self._seen: set[int] = set()
        self._infos: dict[int, tuple[tuple[object, ...], JobInfo]] = {}
        self.requeued = 0

    def __call__(self, sim: QueueSim, now: float) -> None:
        self._admit_new(sim, now)
        self._record_usage(sim)
        snapshot = Snapshot(
            now=now,
            jobs=tuple(
                self._info(j, sim, now) for j in (*sim.pending.values(), *sim.running.values())
            ),
            nodes=node_infos(sim),
            usage=tuple(self.usage),
            tenants=self.tenants,
            state=self.state,
        )
        result = plan(snapshot, self.config, self.policies)
        for change in result.job_changes:
            job = sim.by_id.get(change.job_id)
            if job is None:
                continue
            if change.site_factor is not None:
                job.site_factor = change.site_factor
            if change.req_nodes is not None:
                job.required = expand_hostlist(change.req_nodes)
            if change.exc_nodes is not None:
                job.excluded = expand_hostlist(change.exc_nodes)
            if change.qos is not None and job.state == "PENDING":
                job.qos_now = change.qos
            if change.start_now:
                job.deferred_until = None
        for hold in result.holds:
            if hold.job_id in sim.pending:
                sim.pending[hold.job_id].held = True
        for release in result.releases:
            if release.job_id in sim.pending:
                sim.pending[release.job_id].held = False
        for action in result.actions:
            job = sim.by_id[action.job_id]
            if action.action in (Action.REQUEUE, Action.REQUEUE_HOLD) and job.state == "RUNNING":
                sim.requeue(job, now, hold=action.action is Action.REQUEUE_HOLD)
                self.requeued += 1
            elif action.action is Action.CANCEL and job.state in ("RUNNING", "PENDING"):
                sim.cancel(job, now)
        self.state = result.state

    def _info(self, job: SimJob, sim: QueueSim, now: float) -> JobInfo:
        """The job as the collector would report it, rebuilt only when it changed."""
        waiting = job.eligible > now
        deferred = job.deferred_until is not None and job.deferred_until > now
        key = (
            job.state,
            job.held,
            job.required,
            job.excluded,
            job.restarts,
            job.start,
            waiting,
            job.qos_now,
            deferred,
        )
        cached = self._infos.get(job.job_id)
        if cached is None or cached[0] != key:
            cached = (key, job_info(job, sim, waiting=waiting, deferred=deferred))
            self._infos[job.job_id] = cached
        return cached[1]

    def _admit_new(self, sim: QueueSim, now: float) -> None:
        """Jobs submitted since the last cycle; held ones are recorded as our holds."""
        fresh = [j for j in sim.pending.values() if j.job_id not in self._seen]
        self._seen.update(j.job_id for j in fresh)
        if not self.hold_new or not fresh:
            return
        holds = dict(self.state.holds)
        for job in fresh:
            job.held = True
            holds[job.job_id] = Mark(now, "held at submit until the daemon admits it")
        self.state = replace(self.state, holds=holds)

    def _record_usage(self, sim: QueueSim) -> None:
        fresh, self._recorded = sim.finished[self._recorded :], len(sim.finished)
        for job in fresh:
            if job.start is None or job.end is None:
                continue
            amounts = demand_of(job).amounts(1)
            self.usage.append(UsageRecord(job.account, job.user, job.start, job.end, amounts))


def demand_of(job: SimJob) -> Demand:
    """What the job asks of its node, as Slurm would hold it (whole CPUs, shards)."""
    r = job.request
    shards = gpus = 0
    if r.is_fractional:
        shards = math.ceil(r.gpu_milli * DEFAULT_SHARDS_PER_GPU / 1000)
    else:
        gpus = r.gpu_count
    gpu_type = r.gpu_models[0] if len(r.gpu_models) == 1 else None
    return Demand(max(1, math.ceil(r.cpu_milli / 1000)), r.mem_mib, gpus, gpu_type, shards)


def job_info(
    job: SimJob, sim: QueueSim, *, waiting: bool = False, deferred: bool = False
) -> JobInfo:
    running = job.state == "RUNNING"
    node = sim.cluster.names[job.node] if running else ""
    demand = demand_of(job)
    cards: tuple[CardUse, ...] = ()
    if running:
        shards = demand.shards or DEFAULT_SHARDS_PER_GPU
        cards = tuple(CardUse(node, c, shards) for c in job.cards)
    return JobInfo(
        job_id=job.job_id,
        user=job.user,
        account=job.account,
        partition=PARTITION,
        qos=job.qos_now or job.qos,
        state=job.state,
        submit=job.submit,
        name=job.name,
        reason=_reason(job, running=running, waiting=waiting or deferred),
        held=job.held,
        start=job.start if running else None,
        demand=demand,
        nodes=(node,) if running else (),
        cards=cards,
        required_nodes=job.required,
        excluded_nodes=job.excluded,
        restart_count=job.restarts,
        deferred=deferred and not running,
    )


def _reason(job: SimJob, *, running: bool, waiting: bool) -> str:
    if running:
        return ""
    if job.held:
        return "JobHeldAdmin"
    return "BeginTime" if waiting else "Priority"


def node_infos(sim: QueueSim) -> tuple[NodeInfo, ...]:
    cluster = sim.cluster
    units = cluster.grid.units
    out = []
    for i, spec in enumerate(cluster.specs):
        free = cluster.gpu_free[i, : spec.gpu_count]
        used = tuple(
            int(DEFAULT_SHARDS_PER_GPU - f * DEFAULT_SHARDS_PER_GPU // units) for f in free
        )
        alloc_cpu = math.ceil((spec.cpu_milli - int(cluster.cpu_free[i])) / 1000)
        alloc_mem = spec.mem_mib - int(cluster.mem_free[i])
        busy = alloc_cpu > 0 or any(used)
        out.append(
            NodeInfo(
                name=spec.name,
                state="MIXED" if busy else "IDLE",
                partitions=(PARTITION,),
                cpus=spec.cpu_milli // 1000,
                alloc_cpus=min(alloc_cpu, spec.cpu_milli // 1000),
                mem_mb=spec.mem_mib,
                alloc_mem_mb=alloc_mem,
                gpu_type=spec.gpu_model or None,
                gpus=spec.gpu_count,
                card_used=used,
            )
        )
    return tuple(out)
