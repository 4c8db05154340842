"""Every cluster slurmdbd knows, each read with ``-M``: whether it answers, its nodes by state,
free and total GPUs (cards and shards), NPUs and CPUs, and its queue.

Free capacity is counted as the federation's cluster picker counts it
(:func:`slurm_plugins.federation.snapshot.node_free`): a card with shards in use is not free
as a whole card, and nodes that take no new work have nothing free.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from portal.authz import Access
from portal.errors import Forbidden, SlurmUnavailable
from portal.slurm import ClusterRead, SlurmPort
from slurm_plugins.client.errors import SlurmError
from slurm_plugins.federation.snapshot import node_free

RESOURCES = ("gpus", "shards", "npus", "cpus")


@dataclass(frozen=True, slots=True)
class Capacity:
    free: int
    total: int


@dataclass(frozen=True, slots=True)
class ClusterStatus:
    name: str
    reachable: bool
    error: str = ""
    nodes: int = 0
    states: dict[str, int] = field(default_factory=dict)  # node state -> count
    capacity: dict[str, Capacity] = field(
        default_factory=lambda: {r: Capacity(0, 0) for r in RESOURCES}
    )
    running: int = 0
    pending: int = 0


def require_admin(access: Access) -> None:
    """Platform admins and domain admins see every cluster; nobody else."""
    if not (access.platform_admin or access.admin_of):
        raise Forbidden("the clusters view is for admins")


def summarise(read: ClusterRead) -> ClusterStatus:
    if read.error is not None:
        return ClusterStatus(read.name, reachable=False, error=read.error)
    free = [node_free(n) for n in read.nodes]
    capacity = {
        "gpus": Capacity(
            sum(sum(f.gpus.values()) for f in free), sum(sum(f.total_gpus.values()) for f in free)
        ),
        "shards": Capacity(
            sum(sum(f.shards.values()) for f in free),
            sum(sum(f.total_shards.values()) for f in free),
        ),
        "npus": Capacity(
            sum(sum(f.npus.values()) for f in free), sum(sum(f.total_npus.values()) for f in free)
        ),
        "cpus": Capacity(sum(f.cpus for f in free), sum(f.total_cpus for f in free)),
    }
    return ClusterStatus(
        read.name,
        reachable=True,
        nodes=len(read.nodes),
        states=dict(sorted(Counter(n.state.value.lower() for n in read.nodes).items())),
        capacity=capacity,
        running=sum(1 for j in read.jobs if j.is_running),
        pending=sum(1 for j in read.jobs if j.is_pending),
    )


def read_clusters(port: SlurmPort, access: Access) -> list[ClusterStatus]:
    """Every cluster, by name; one that does not answer is listed as such."""
    require_admin(access)
    try:
        reads = port.clusters()
    except SlurmError as exc:
        raise SlurmUnavailable(f"clusters: {exc}") from exc
    return [summarise(r) for r in sorted(reads, key=lambda r: r.name)]
