"""Build a :class:`~slurm_plugins.policy.snapshot.Snapshot` from the client's typed models.

Pure conversion: the daemon reads Slurm through the client and hands the models in here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from datetime import datetime

from gres.hostlist import expand_hostlist
from gres.naming import DEFAULT_SHARDS_PER_GPU
from slurm_plugins.client import labels as job_labels
from slurm_plugins.client.models import AcctJob, Association, Job, Node, Tres
from slurm_plugins.node import Sample
from slurm_plugins.policy.resources import Amounts, card_fraction, parse_demand
from slurm_plugins.policy.snapshot import (
    CardUse,
    DaemonState,
    JobInfo,
    NodeInfo,
    Snapshot,
    Tenant,
    UsageRecord,
)

_DETAIL = re.compile(
    r"(?P<name>[a-z]+)(?::(?P<type>[^:(]+))?:(?P<n>\d+)\((?:IDX:)?(?P<idx>[^)]*)\)"
)
_SHARES = re.compile(r"(\d+)/\d+")


def _ts(t: datetime | None) -> float | None:
    return t.timestamp() if t is not None else None


def deferred(j: Job, now: float) -> bool:
    """Still waiting for the placement daemon: tagged by the hook, pending, never started,
    and its begin time not reached (a requeued job waits for Slurm's own reasons)."""
    if not j.is_pending or j.restart_count or j.eligible_time is None:
        return False
    if j.eligible_time.timestamp() <= now:
        return False
    return job_labels.tagged_deferred(j.admin_comment)


def job_info(j: Job, *, now: float) -> JobInfo:
    nodes = max(j.node_count, 1)
    mem_total = j.tres_req["mem"] or j.tres_alloc["mem"]
    demand = parse_demand(
        j.gres_request or _gres_from_tres(j.tres_req or j.tres_alloc, nodes),
        cpus=max(j.cpus, 1) // nodes,
        mem_mb=mem_total // nodes,
    )
    node_names = expand_hostlist(j.nodes) if j.state.value == "RUNNING" else ()
    return JobInfo(
        job_id=j.job_id,
        user=j.user,
        account=j.account,
        partition=j.partition,
        qos=j.qos,
        state=j.state.value,
        submit=_ts(j.submit_time) or now,
        name=j.name,
        reason=j.reason or "",
        held=j.held,
        start=_ts(j.start_time) if j.state.value == "RUNNING" else None,
        node_count=nodes,
        demand=demand,
        nodes=node_names,
        cards=tuple(_cards(node_names, j.gres_detail, DEFAULT_SHARDS_PER_GPU)),
        required_nodes=expand_hostlist(j.required_nodes),
        excluded_nodes=expand_hostlist(j.excluded_nodes),
        features=j.features,
        labels=job_labels.decode(j.comment),
        priority=j.priority,
        restart_count=j.restart_count,
        requeue=bool(getattr(j, "requeue", True)),
        dependency=j.dependency,
        deferred=deferred(j, now),
    )


def _gres_from_tres(tres: Tres, nodes: int) -> str:
    items = []
    for kind in ("gpu", "npu"):
        typed = tres.typed(kind)
        if typed:
            items += [f"{kind}:{t}:{n // nodes}" for t, n in typed.items()]
        elif tres[f"gres/{kind}"]:
            items.append(f"{kind}:{tres[f'gres/{kind}'] // nodes}")
    if tres.shards:
        items.append(f"shard:{tres.shards // nodes}")
    return ",".join(items)


def _cards(nodes: Sequence[str], details: Sequence[str], per_gpu: int) -> Iterable[CardUse]:
    for node, detail in zip(nodes, details, strict=False):
        for m in _DETAIL.finditer(detail):
            idx = _indexes(m["idx"])
            if m["name"] == "gpu":
                yield from (CardUse(node, i, per_gpu) for i in idx)
            elif m["name"] == "shard" and (per_card := _SHARES.findall(m["idx"])):
                # 23.02+: this job's shards on each card of the node, "used/total" by index
                yield from (CardUse(node, i, int(u)) for i, u in enumerate(per_card) if int(u))
            elif m["name"] == "shard" and idx:
                yield CardUse(node, idx[0], int(m["n"]))


def _busy(indexes: str) -> list[int]:
    """The cards slurmctld marks used in a node's ``GRES_USED`` entry: by index
    (``IDX:0-1``, 22.05) or, for shards on 23.02+, as used/total per card (``8/32,0/32``)."""
    if per_card := _SHARES.findall(indexes):
        return [i for i, used in enumerate(per_card) if int(used)]
    return _indexes(indexes)


def _indexes(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        if lo.isdigit() and (not hi or hi.isdigit()):
            out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def node_info(n: Node, running: Sequence[JobInfo], switch: str | None = None) -> NodeInfo:
    gpus = n.gres_total("gpu")
    shards = n.gres_total("shard")
    per_gpu = shards // gpus if gpus and shards else DEFAULT_SHARDS_PER_GPU
    used = [0] * gpus
    for j in running:
        for c in j.cards:
            if c.node == n.name and 0 <= c.card < gpus:
                used[c.card] = min(per_gpu, used[c.card] + c.shards)
    for g in n.gres_used:  # whole cards by index, in case a job's detail was missing
        if g.name == "gpu" and g.count:
            for i in _indexes(g.indexes):
                if 0 <= i < gpus:
                    used[i] = per_gpu
    busy = {i for g in n.gres_used if g.name in ("gpu", "shard") for i in _busy(g.indexes)}
    busy &= set(range(gpus))
    npus = {g.type or "": g.count for g in n.gres if g.name == "npu"}
    npus_used = {g.type or "": g.count for g in n.gres_used if g.name == "npu" and g.count}
    gpu_types = [g.type for g in n.gres if g.name == "gpu" and g.type]
    return NodeInfo(
        name=n.name,
        state=n.state.value,
        flags=frozenset(n.flags),
        partitions=tuple(n.partitions),
        features=tuple(n.features),
        weight=n.weight,
        reason=n.reason,
        cpus=n.cpus,
        alloc_cpus=n.alloc_cpus,
        mem_mb=n.real_memory,
        alloc_mem_mb=n.alloc_memory,
        gpu_type=gpu_types[0] if gpu_types else None,
        gpus=gpus,
        shards_per_gpu=per_gpu,
        card_used=tuple(used),
        npus=npus,
        npus_used=npus_used,
        slurm_busy=tuple(sorted(busy)) if gpus else None,
        switch=switch,
    )


def tres_amounts(tres: Tres, per_gpu: int = DEFAULT_SHARDS_PER_GPU) -> Amounts:
    """Card units of an allocation: shards and vNPUs count as fractions of a card."""
    npu_typed = tres.typed("npu")
    npu = sum(n * card_fraction(t) for t, n in npu_typed.items()) if npu_typed else float(tres.npus)
    return Amounts(tres.gpus + tres.shards / per_gpu, npu, float(tres["cpu"]), tres["mem"] / 1024)


def usage_records(
    acct: Iterable[AcctJob], *, skip: AbstractSet[int] = frozenset()
) -> tuple[UsageRecord, ...]:
    """Finished jobs' resource use; jobs still in the queue are counted from the snapshot."""
    out = []
    for a in acct:
        if a.job_id in skip or a.start_time is None or a.end_time is None:
            continue
        start, end = a.start_time.timestamp(), a.end_time.timestamp()
        if end > start:
            out.append(UsageRecord(a.account, a.user, start, end, tres_amounts(a.tres_alloc)))
    return tuple(out)


def build(
    jobs: Sequence[Job],
    nodes: Sequence[Node],
    *,
    now: float,
    acct: Iterable[AcctJob] = (),
    associations: Iterable[Association] = (),
    tenants: Sequence[Tenant] = (),
    samples: Mapping[int, tuple[Sample, ...]] | None = None,
    state: DaemonState | None = None,
    switches: Mapping[str, str] | None = None,
    shards_across_cards: bool = False,
) -> Snapshot:
    infos = tuple(job_info(j, now=now) for j in jobs if j.state.is_active)
    running = [j for j in infos if j.running]
    live = {j.job_id for j in infos}
    return Snapshot(
        now=now,
        jobs=infos,
        nodes=tuple(node_info(n, running, (switches or {}).get(n.name)) for n in nodes),
        usage=usage_records(acct, skip=live),
        tenants=tuple(tenants),
        accounts={a.account: a.parent for a in associations if not a.user and a.parent},
        samples={k: v for k, v in (samples or {}).items() if k in live},
        state=state or DaemonState(),
        shards_across_cards=shards_across_cards,
    )
