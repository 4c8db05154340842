"""Time-based replay of a task list with departures, queueing and the queue policies.

Each task arrives in trace order at its ``creation_time`` and, once started, runs for
``deletion_time - scheduled_time`` (its life in the traced cluster), cut at the partition's
time limit (``max_runtime_s``, 24 h by default). The published subset of the trace is sparse
(it never asks for more than about 1 % of its cluster at once, and all of it together asks
for less than the cluster has), so the replay runs on a slice of the nodes (every k-th by
name, which keeps the mix of models) and compresses arrivals in time until the offered load
— GPU-seconds asked for over the arrival span — is ``load`` x the slice's GPUs. Tasks are
spread over ``tenants`` accounts by a hash of their name, and the trace's QoS becomes a
Slurm QOS: LS and Guaranteed ``high``, Burstable ``normal``, BE ``low``.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sim import metrics
from sim.daemon import Daemon
from sim.queue import QueueSim, SimJob
from sim.trace import NodeSpec, Task, TraceError
from slurm_plugins.policy.engine import PolicyConfig
from slurm_plugins.policy.snapshot import Tenant

QOS_OF = {"LS": "high", "Guaranteed": "high", "Burstable": "normal", "BE": "low"}

POLICY_SETS: dict[str, tuple[PolicyConfig, ...]] = {
    "fifo": (PolicyConfig("fifo"),),
    "fair": (PolicyConfig("fair"),),
    "priority": (PolicyConfig("priority"),),
    "capacity": (PolicyConfig("capacity"), PolicyConfig("priority", weight=0.5)),
}


def tenant_of(task: Task, count: int) -> str:
    return f"tenant{zlib.crc32(task.name.encode()) % count}"


def tenants(nodes: Sequence[NodeSpec], count: int) -> list[Tenant]:
    """Equal shares: each tenant's nominal GPU quota is its share of the cluster, lendable."""
    gpus = sum(n.gpu_count for n in nodes)
    return [Tenant(f"tenant{k}", cohort="all", nominal={"gpu": gpus / count}) for k in range(count)]


DAY = 86_400.0


def node_slice(nodes: Sequence[NodeSpec], fraction: float) -> list[NodeSpec]:
    """Every k-th node by name (k = 1/fraction), at least one."""
    if not 0 < fraction <= 1:
        raise ValueError(f"node fraction must be in (0, 1], got {fraction}")
    step = max(1, round(1 / fraction))
    return sorted(nodes, key=lambda n: n.name)[::step]


def compression(
    tasks: Sequence[Task], capacity_gpu: float, load: float, max_runtime_s: float = DAY
) -> float:
    """How much faster than traced the tasks must arrive for the offered load."""
    work = sum(t.request.total_gpu_milli / 1000 * _runtime(t, max_runtime_s) for t in tasks)
    first = min(_creation(t) for t in tasks)
    span = max(_creation(t) for t in tasks) - first
    if work <= 0 or span <= 0:
        raise TraceError("the task list has no GPU work over time to replay")
    return max(1.0, load * capacity_gpu * span / work)


def jobs(
    tasks: Sequence[Task], *, factor: float, tenant_count: int, max_runtime_s: float = DAY
) -> list[SimJob]:
    first = min(_creation(t) for t in tasks)
    out = []
    for k, task in enumerate(sorted(tasks, key=lambda t: (_creation(t), t.name))):
        account = tenant_of(task, tenant_count)
        out.append(
            SimJob(
                job_id=k + 1,
                name=task.name,
                user=account,
                account=account,
                qos=QOS_OF.get(task.qos, "normal"),
                request=task.request,
                submit=(_creation(task) - first) / factor,
                runtime=max(_runtime(task, max_runtime_s), 1.0),
                klass=task.qos or "-",
            )
        )
    return out


def _creation(task: Task) -> float:
    if task.creation is None:
        raise TraceError(f"task {task.name} has no creation_time; a replay needs times")
    return float(task.creation)


def _runtime(task: Task, limit: float) -> float:
    if task.deletion is None:
        raise TraceError(f"task {task.name} has no deletion_time; a replay needs times")
    began = task.scheduled if task.scheduled is not None else task.creation
    return min(float(task.deletion - (began if began is not None else task.deletion)), limit)


@dataclass(frozen=True, slots=True)
class ReplaySetup:
    """What a replay runs on: the trace, the node slice, the load and the daemon's rhythm."""

    load: float = 1.2
    node_fraction: float = 0.1
    tenant_count: int = 4
    max_runtime_s: float = DAY
    cycle_s: float = 60.0
    scorer: str = "aipool"
    #: Run the daemon's own ``placement`` policy too: it pins fractional jobs to the node the
    #: scorer picks (ReqNodeList), which the Slurm model then honours.
    daemon_placement: bool = True
    #: slurmctld's node for work not pinned (yet): ``scorer`` or ``weight`` (sim.queue).
    unpinned: str = "scorer"
    #: ``ideal``: the settings above; ``live``: what the live path does — every job deferred
    #: by the admission hook and pinned by the daemon woken by its submission, unpinned work
    #: placed by Weight (``daemon_placement`` and ``unpinned`` are then implied).
    rules: str = "ideal"
    #: The hook's deferral (the lab's ``defer``), for ``live``.
    defer_s: float = 15.0

    def policies(self, name: str) -> tuple[PolicyConfig, ...]:
        chosen = POLICY_SETS[name]
        if self.rules == "live":
            return (*chosen, PolicyConfig("placement", weight=0, args={"scorer": self.scorer}))
        if self.daemon_placement:
            # pending shares pinned each cycle, as the daemon did before it deferred work
            args = {"scorer": self.scorer, "lookahead": 50}
            chosen += (PolicyConfig("placement", weight=0, args=args),)
        return chosen


def run_replay(
    nodes: Sequence[NodeSpec], tasks: Sequence[Task], policy: str, setup: ReplaySetup
) -> dict[str, Any]:
    """Replay ``tasks`` under one queue policy set; plain data for JSON."""
    started = time.process_time()
    sliced = node_slice(nodes, setup.node_fraction)
    gpus = sum(n.gpu_count for n in sliced)
    factor = compression(tasks, gpus, setup.load, setup.max_runtime_s)
    sim_jobs = jobs(
        tasks, factor=factor, tenant_count=setup.tenant_count, max_runtime_s=setup.max_runtime_s
    )
    daemon = Daemon(
        setup.policies(policy), tenants(sliced, setup.tenant_count), hold_new=policy == "capacity"
    )
    live = setup.rules == "live"
    sim = QueueSim(
        sliced,
        sim_jobs,
        daemon,
        scorer=setup.scorer,
        cycle_s=setup.cycle_s,
        unpinned="weight" if live else setup.unpinned,
        defer_s=setup.defer_s if live else None,
    )
    run = sim.run()
    alloc, span = metrics.overload_allocation(run)
    by_tenant = metrics.service_ratio(run.jobs, lambda j: j.account)
    by_qos = metrics.service_ratio(run.jobs, lambda j: j.qos)
    return {
        "policy": policy,
        "rules": setup.rules,
        "nodes": len(sliced),
        "gpus": gpus,
        "tasks": len(sim_jobs),
        "compression": round(factor, 1),
        "overload_hours": round(span / 3600, 2),
        "alloc_overload": round(alloc, 2),
        "alloc_mean": round(metrics.mean_allocation(run), 2),
        "waits_by_qos": metrics.rounded(metrics.waits(run.jobs, lambda j: j.qos)),
        "waits_by_trace_qos": metrics.rounded(metrics.waits(run.jobs, lambda j: j.klass)),
        "service_by_tenant": {k: round(v, 4) for k, v in by_tenant.items()},
        "jain_tenants": round(metrics.jain(by_tenant.values()), 4),
        "jain_qos": round(metrics.jain(by_qos.values()), 4),
        "requeued": daemon.requeued,
        "pinned_by_daemon": sum(1 for j in run.jobs if j.required),
        "cycles": run.cycles,
        "unstarted": run.unstarted,
        "cpu_seconds": round(time.process_time() - started, 1),
        "series": metrics.series(run, points=400),
    }
