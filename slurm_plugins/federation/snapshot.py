"""Per-cluster snapshots read through the Slurm client, one ``-M <cluster>`` at a time.

Slurm 22.05's ``--json`` output ignores ``-M all`` (it lists only the local cluster), so every
cluster is asked by name; the cluster list comes from slurmdbd (``sacctmgr show cluster``).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence

from slurm_plugins.client import SlurmClient, SlurmError
from slurm_plugins.client.models import Node
from slurm_plugins.federation.model import ClusterSnapshot, NodeFree

log = logging.getLogger("aipool.federation")


def node_free(node: Node) -> NodeFree:
    """Free and total whole cards, shards and NPUs per model, and free CPUs, of one node.

    A card with shards in use cannot be handed out whole (and the reverse), so cards busy
    with shards are estimated as ``ceil(shards in use / shards per card)``.
    """
    total: dict[str, Counter[str]] = {"gpu": Counter(), "shard": Counter(), "npu": Counter()}
    for g in node.gres:
        if g.name in total:
            total[g.name][g.type or ""] += g.count
    used: dict[str, Counter[str]] = {k: Counter() for k in total}
    for kind, models in total.items():
        for model in models:
            key = f"gres/{kind}:{model}" if model else f"gres/{kind}"
            if key in node.tres_used.counts:
                used[kind][model] = node.tres_used[key]
            else:
                used[kind][model] = sum(
                    g.count for g in node.gres_used if g.name == kind and (g.type or "") == model
                )
    gpus, shards = {}, {}
    for model, cards in total["gpu"].items():
        per_card = total["shard"].get(model, 0) // cards if cards else 0
        shard_cards = -(-used["shard"][model] // per_card) if per_card else 0
        gpus[model] = max(0, cards - used["gpu"][model] - shard_cards)
        if per_card:
            shards[model] = max(
                0, total["shard"][model] - used["shard"][model] - per_card * used["gpu"][model]
            )
    npus = {m: max(0, c - used["npu"][m]) for m, c in total["npu"].items()}
    up = node.available
    return NodeFree(
        name=node.name,
        cpus=max(0, node.cpus - node.alloc_cpus) if up else 0,
        gpus=gpus if up else {},
        shards=shards if up else {},
        npus=npus if up else {},
        total_cpus=node.cpus,
        total_gpus=dict(total["gpu"]),
        total_shards=dict(total["shard"]),
        total_npus=dict(total["npu"]),
    )


def take(client: SlurmClient, clusters: Sequence[str] | None = None) -> list[ClusterSnapshot]:
    """A snapshot of every cluster slurmdbd knows (or of ``clusters``)."""
    names = list(clusters) if clusters else client.clusters()
    try:
        assocs = client.associations()
    except SlurmError as exc:
        log.warning("cannot read associations, not filtering by them: %s", exc)
        assocs = []
    out = []
    for name in names:
        accounts = frozenset(a.account for a in assocs if a.cluster == name) if assocs else None
        on = client.on(name)
        try:
            nodes = on.nodes()
            pending = sum(1 for j in on.jobs() if j.is_pending)
        except SlurmError as exc:
            log.warning("cluster %s does not answer: %s", name, exc)
            out.append(ClusterSnapshot(name, reachable=False, accounts=accounts))
            continue
        out.append(
            ClusterSnapshot(
                name,
                nodes=tuple(node_free(n) for n in nodes),
                accounts=accounts,
                pending=pending,
            )
        )
    return out
