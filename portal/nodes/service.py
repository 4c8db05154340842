"""Cluster capacity and use, from ``SlurmClient.nodes()``."""

from __future__ import annotations

from dataclasses import dataclass

from portal.errors import SlurmUnavailable
from portal.slurm import SlurmPort
from slurm_plugins.client.errors import SlurmError
from slurm_plugins.client.models import Node

RESOURCES = ("gpus", "shards", "npus", "cpus", "memory_mb")


@dataclass(frozen=True, slots=True)
class Usage:
    used: int
    total: int


def node_usage(node: Node) -> dict[str, Usage]:
    return {
        "gpus": Usage(node.gres_in_use("gpu"), node.gres_total("gpu")),
        "shards": Usage(node.gres_in_use("shard"), node.gres_total("shard")),
        "npus": Usage(node.gres_in_use("npu"), node.gres_total("npu")),
        "cpus": Usage(node.alloc_cpus, node.cpus),
        "memory_mb": Usage(node.alloc_memory, node.real_memory),
    }


def totals(nodes: list[Node]) -> dict[str, Usage]:
    out = {r: Usage(0, 0) for r in RESOURCES}
    for node in nodes:
        for r, u in node_usage(node).items():
            out[r] = Usage(out[r].used + u.used, out[r].total + u.total)
    return out


def read_nodes(port: SlurmPort) -> list[Node]:
    try:
        return sorted(port.nodes(), key=lambda n: n.name)
    except SlurmError as exc:
        raise SlurmUnavailable(f"nodes: {exc}") from exc
