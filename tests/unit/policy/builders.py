"""Small builders for policy tests: jobs, nodes and snapshots in a line each.

Running jobs given without cards are placed the way slurmctld would (lowest free cards),
and the nodes' usage is derived from them, so a test states only what matters to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from slurm_plugins.policy.engine import EngineConfig, PolicyConfig, plan
from slurm_plugins.policy.plan import Plan
from slurm_plugins.policy.resources import Demand
from slurm_plugins.policy.snapshot import (
    CardUse,
    DaemonState,
    JobInfo,
    NodeInfo,
    Snapshot,
    Tenant,
    UsageRecord,
)

NOW = 1_800_000_000.0  # a fixed clock: 2027-01-15


def job(
    job_id: int,
    *,
    user: str = "alice",
    account: str = "nlp",
    qos: str = "normal",
    state: str = "PENDING",
    submit: float | None = None,
    gpus: int = 0,
    shards: int = 0,
    npus: int = 0,
    npu_type: str | None = None,
    cpus: int = 1,
    mem: int = 1000,
    partition: str = "gpu",
    nodes: Sequence[str] = (),
    node_count: int = 1,
    start: float | None = None,
    labels: Mapping[str, str] | None = None,
    held: bool = False,
    reason: str = "",
    **kw: Any,
) -> JobInfo:
    running = state == "RUNNING"
    return JobInfo(
        job_id=job_id,
        user=user,
        account=account,
        partition=partition,
        qos=qos,
        state=state,
        submit=NOW - 1000 + job_id if submit is None else submit,
        reason=reason or ("JobHeldAdmin" if held else ""),
        held=held,
        start=(start if start is not None else NOW - 600) if running else None,
        node_count=node_count,
        demand=Demand(cpus, mem, gpus, None, shards, npus, npu_type),
        nodes=tuple(nodes),
        labels=dict(labels or {}),
        **kw,
    )


def running(job_id: int, node: str | Sequence[str], **kw: Any) -> JobInfo:
    nodes = (node,) if isinstance(node, str) else tuple(node)
    return job(job_id, state="RUNNING", nodes=nodes, node_count=len(nodes), **kw)


def gpu_node(
    name: str, *, gpus: int = 4, partitions: Sequence[str] = ("gpu",), **kw: Any
) -> NodeInfo:
    return NodeInfo(
        name=name,
        partitions=tuple(partitions),
        features=("a100", "gpu"),
        cpus=16,
        mem_mb=64000,
        gpu_type="a100",
        gpus=gpus,
        card_used=(0,) * gpus,
        **kw,
    )


def npu_node(name: str, *, npus: Mapping[str, int] | None = None, **kw: Any) -> NodeInfo:
    return NodeInfo(
        name=name,
        partitions=("npu",),
        features=("910b", "npu"),
        cpus=16,
        mem_mb=64000,
        npus=dict(npus or {"910b": 8}),
        **kw,
    )


def cpu_node(name: str, **kw: Any) -> NodeInfo:
    return NodeInfo(name=name, partitions=("cpu",), cpus=16, mem_mb=64000, **kw)


def _occupy(nodes: dict[str, NodeInfo], j: JobInfo) -> JobInfo:
    """Put a running job on its nodes (cards as slurmctld picks them) and return it with cards."""
    cards: list[CardUse] = list(j.cards)
    for name in j.nodes:
        n = nodes[name]
        used = list(n.card_used)
        spg = n.shards_per_gpu
        if not j.cards:
            if j.demand.gpus:
                free = [i for i, u in enumerate(used) if u == 0][: j.demand.gpus]
                assert len(free) == j.demand.gpus, f"job {j.job_id} does not fit on {name}"
                cards += [CardUse(name, i, spg) for i in free]
            if j.demand.shards:
                i = next(i for i, u in enumerate(used) if spg - u >= j.demand.shards)
                cards.append(CardUse(name, i, j.demand.shards))
        for c in cards:
            if c.node == name:
                used[c.card] += c.shards
        npus_used = dict(n.npus_used)
        if j.demand.npus:
            t = j.demand.npu_type or next(iter(n.npus))
            npus_used[t] = npus_used.get(t, 0) + j.demand.npus
        nodes[name] = replace(
            n,
            card_used=tuple(used),
            alloc_cpus=n.alloc_cpus + j.demand.cpus,
            alloc_mem_mb=n.alloc_mem_mb + j.demand.mem_mb,
            npus_used=npus_used,
            state="MIXED",
        )
    return replace(j, cards=tuple(cards))


def snap(
    jobs: Iterable[JobInfo] = (),
    nodes: Iterable[NodeInfo] = (),
    *,
    now: float = NOW,
    tenants: Iterable[Tenant] = (),
    usage: Iterable[UsageRecord] = (),
    state: DaemonState | None = None,
    **kw: Any,
) -> Snapshot:
    by_name = {n.name: n for n in nodes}
    placed = [_occupy(by_name, j) if j.running else j for j in jobs]
    return Snapshot(
        now=now,
        jobs=tuple(placed),
        nodes=tuple(by_name.values()),
        usage=tuple(usage),
        tenants=tuple(tenants),
        state=state or DaemonState(),
        **kw,
    )


def config(*policies: str | PolicyConfig, **kw: Any) -> EngineConfig:
    pcs = tuple(PolicyConfig(p) if isinstance(p, str) else p for p in policies)
    return EngineConfig(policies=pcs, **kw)


def pol(name: str, weight: float = 1.0, tier: int = 0, **args: Any) -> PolicyConfig:
    return PolicyConfig(name, weight, tier, args)


def run(s: Snapshot, *policies: str | PolicyConfig, **kw: Any) -> Plan:
    return plan(s, config(*policies, **kw))


def held_ids(p: Plan) -> set[int]:
    return {h.job_id for h in p.holds}


def released_ids(p: Plan) -> set[int]:
    return {h.job_id for h in p.releases}


def site_factors(p: Plan) -> dict[int, int]:
    return {c.job_id: c.site_factor for c in p.job_changes if c.site_factor is not None}


def apply_state(s: Snapshot, p: Plan, **changes: Any) -> Snapshot:
    """The snapshot of the next cycle, had Slurm done exactly what the plan asked."""
    held = held_ids(p)
    rel = released_ids(p)
    by_id = {c.job_id: c for c in p.job_changes}
    jobs = []
    for old in s.jobs:
        j = old
        c = by_id.get(j.job_id)
        if c is not None:
            if c.exc_nodes is not None:
                j = replace(j, excluded_nodes=tuple(filter(None, c.exc_nodes.split(","))))
            if c.req_nodes is not None:
                j = replace(j, required_nodes=tuple(filter(None, c.req_nodes.split(","))))
            if c.qos is not None and j.pending:  # Slurm moves pending jobs only
                j = replace(j, qos=c.qos)
            if c.start_now:  # its begin time is now: no longer waiting for the daemon
                j = replace(j, deferred=False, reason="Resources")
        if j.job_id in held:
            j = replace(j, held=True, reason="JobHeldAdmin")
        if j.job_id in rel:
            j = replace(j, held=False, reason="")
        jobs.append(j)
    weights = {w.node: w.weight for w in p.node_weights}
    nodes = tuple(replace(n, weight=weights.get(n.name, n.weight)) for n in s.nodes)
    return replace(s, jobs=tuple(jobs), nodes=nodes, state=p.state, **changes)
