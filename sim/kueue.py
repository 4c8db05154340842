"""Kueue's "baseline" scheduler performance scenario, in virtual time.

From ``kubernetes-sigs/kueue`` ``test/performance/scheduler/configs/baseline``: 5 cohorts x 6
cluster queues, each with a nominal quota of 20 CPUs and a borrowing limit of 100; per
queue 350 small (1 CPU, 200 ms, priority 50, one every 100 ms), 100 medium (5 CPUs,
500 ms, priority 100, every 500 ms) and 50 large (20 CPUs, 1 s, priority 200, every
1.2 s) workloads. Kueue admits by quota only, so the cluster here is one node with all
600 CPUs: there is nothing to fragment.

Measured as Kueue's checker does: the cluster queues' usage (CPU-seconds admitted over
nominal quota x the time from the first to the last event) and the mean time from creation
to first admission per workload class. Each cluster queue is an AIPool tenant (a Slurm
account) with the same quotas; priorities 200 / 100 / 50 are QOS high / normal / low.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from gres.placement import Request
from sim.daemon import Daemon
from sim.queue import QueueRun, QueueSim, SimJob
from sim.trace import NodeSpec
from slurm_plugins.policy.engine import PolicyConfig
from slurm_plugins.policy.snapshot import Tenant

COHORTS = 5
QUEUES_PER_COHORT = 6
NOMINAL = 20.0
BORROWING_LIMIT = 100.0


@dataclass(frozen=True, slots=True)
class WorkloadClass:
    name: str
    count: int
    interval_s: float
    cpus: int
    runtime_s: float
    qos: str


CLASSES = (
    WorkloadClass("small", 350, 0.1, 1, 0.2, "low"),
    WorkloadClass("medium", 100, 0.5, 5, 0.5, "normal"),
    WorkloadClass("large", 50, 1.2, 20, 1.0, "high"),
)
#: Kueue's own averages over five runs, and its pass thresholds.
KUEUE_REPORTED = {"min_usage": 55.9, "small": 215.5, "medium": 76.8, "large": 16.5}
KUEUE_THRESHOLDS = {"min_usage": 50.0, "small": 260.0, "medium": 90.0, "large": 23.0}

#: Policy configurations compared on the scenario.
POLICY_SETS: dict[str, tuple[PolicyConfig, ...]] = {
    "fifo": (PolicyConfig("fifo"),),
    "fair": (PolicyConfig("fair", args={"weights": {"cpu": 1.0}}),),
    "priority": (PolicyConfig("priority"),),
    "capacity": (
        PolicyConfig("capacity", args={"resources": ["cpu"], "reclaim": "any"}),
        PolicyConfig("priority", weight=0.5),
    ),
}


def queue_name(cohort: int, queue: int) -> str:
    return f"cohort{cohort}-cq{queue}"


def tenants() -> list[Tenant]:
    return [
        Tenant(
            queue_name(c, q),
            cohort=f"cohort{c}",
            nominal={"cpu": NOMINAL},
            borrowing_limit={"cpu": BORROWING_LIMIT},
        )
        for c in range(COHORTS)
        for q in range(QUEUES_PER_COHORT)
    ]


def nodes() -> list[NodeSpec]:
    cpus = int(COHORTS * QUEUES_PER_COHORT * NOMINAL)
    return [NodeSpec("quota", cpus * 1000, 1 << 30, 0, "")]


def jobs(fraction: float = 1.0) -> list[SimJob]:
    """The scenario's workloads; ``fraction`` < 1 keeps that share of each class (tests)."""
    out: list[SimJob] = []
    for c in range(COHORTS):
        for q in range(QUEUES_PER_COHORT):
            account = queue_name(c, q)
            for wc in CLASSES:
                for k in range(max(1, math.ceil(wc.count * fraction))):
                    out.append(
                        SimJob(
                            job_id=len(out) + 1,
                            name=f"{account}-{wc.name}-{k}",
                            user=account,
                            account=account,
                            qos=wc.qos,
                            request=Request(wc.cpus * 1000, 0),
                            submit=k * wc.interval_s,
                            runtime=wc.runtime_s,
                            klass=wc.name,
                        )
                    )
    return out


def measure(run: QueueRun) -> dict[str, float]:
    """Kueue's figures: queue usage (%) and mean seconds to admission per class."""
    first = min(j.submit for j in run.jobs)
    last = max((e for j in run.jobs for _, e in j.runs), default=first)
    used = sum(j.request.cpu_milli / 1000 * (e - s) for j in run.jobs for s, e in j.runs)
    quota = COHORTS * QUEUES_PER_COHORT * NOMINAL
    out = {"min_usage": 100 * used / (quota * (last - first)) if last > first else 0.0}
    for wc in CLASSES:
        waits = [
            j.first_start - j.submit
            for j in run.jobs
            if j.klass == wc.name and j.first_start is not None
        ]
        out[wc.name] = sum(waits) / len(waits) if waits else float("nan")
    out["evictions"] = float(sum(j.restarts for j in run.jobs))
    out["makespan_s"] = last - first
    out["unstarted"] = float(run.unstarted)
    return out


def run_kueue(policy: str, *, cycle_s: float = 1.0, fraction: float = 1.0) -> dict[str, Any]:
    """The scenario under one policy set; Kueue's figures next to ours."""
    started = time.process_time()
    daemon = Daemon(POLICY_SETS[policy], tenants(), hold_new=policy == "capacity")
    sim = QueueSim(nodes(), jobs(fraction), daemon, scorer="best-fit", cycle_s=cycle_s)
    run = sim.run()
    measured = measure(run)
    return {
        "policy": policy,
        **{k: round(v, 2) for k, v in measured.items()},
        "requeued": daemon.requeued,
        "cycles": run.cycles,
        "cpu_seconds": round(time.process_time() - started, 1),
        "meets_kueue_thresholds": bool(
            measured["min_usage"] >= KUEUE_THRESHOLDS["min_usage"]
            and all(measured[c.name] <= KUEUE_THRESHOLDS[c.name] for c in CLASSES)
        ),
    }
