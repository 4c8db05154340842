"""Every cluster slurmdbd knows, each read with ``-M``: whether it answers, its nodes by state,
its capacity counted as every page counts it (:mod:`slurm_plugins.client.capacity`: whole
cards, shards and vNPUs as fractions of a card, whole cards free, CPUs), and its queue."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from portal.authz import Access
from portal.errors import Forbidden, SlurmUnavailable
from portal.i18n import gettext
from portal.slurm import ClusterRead, SlurmPort
from slurm_plugins.client import capacity
from slurm_plugins.client.capacity import Capacity
from slurm_plugins.client.errors import SlurmError


@dataclass(frozen=True, slots=True)
class ClusterStatus:
    name: str
    reachable: bool
    error: str = ""
    nodes: int = 0
    states: dict[str, int] = field(default_factory=dict)  # node state -> count
    capacity: Capacity = field(default_factory=Capacity)
    running: int = 0
    pending: int = 0


def require_admin(access: Access) -> None:
    """Platform admins and domain admins see every cluster; nobody else."""
    if not (access.platform_admin or access.admin_of):
        raise Forbidden(gettext("The clusters page is for platform and domain admins."))


def summarise(read: ClusterRead) -> ClusterStatus:
    if read.error is not None:
        return ClusterStatus(read.name, reachable=False, error=read.error)
    return ClusterStatus(
        read.name,
        reachable=True,
        nodes=len(read.nodes),
        states=dict(sorted(Counter(n.state.value for n in read.nodes).items())),
        capacity=capacity.of_nodes(read.nodes),
        running=sum(1 for j in read.jobs if j.is_running),
        pending=sum(1 for j in read.jobs if j.is_pending),
    )


def read_clusters(port: SlurmPort, access: Access) -> list[ClusterStatus]:
    """Every cluster, by name; one that does not answer is listed as such."""
    require_admin(access)
    try:
        reads = port.clusters()
    except SlurmError as exc:
        raise SlurmUnavailable(
            gettext("Slurm did not answer (%(what)s): %(why)s", what="clusters", why=str(exc))
        ) from exc
    return [summarise(r) for r in sorted(reads, key=lambda r: r.name)]
