"""Cluster capacity and use, from ``SlurmClient.nodes()``, counted once for every page and
the API by :mod:`slurm_plugins.client.capacity` (whole cards, shards and vNPUs as fractions
of a card, whole cards free, CPUs, memory) per node, partition and pool."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from portal.errors import SlurmUnavailable
from portal.i18n import gettext
from portal.slurm import SlurmPort
from slurm_plugins.client import capacity
from slurm_plugins.client.capacity import Capacity
from slurm_plugins.client.errors import SlurmError
from slurm_plugins.client.models import Node


@dataclass(frozen=True, slots=True)
class Pool:
    """The pool's capacity, each partition's, and each node's: what the dashboard, the nodes
    and clusters pages and the API show."""

    total: Capacity
    partitions: dict[str, Capacity]
    nodes: tuple[tuple[Node, Capacity], ...]


def pool_of(nodes: Iterable[Node]) -> Pool:
    listed = sorted(nodes, key=lambda n: n.name)
    each = tuple((n, capacity.node_capacity(n)) for n in listed)
    return Pool(
        capacity.total(c for _, c in each),
        capacity.by_partition(listed),
        each,
    )


def read_nodes(port: SlurmPort) -> list[Node]:
    try:
        return sorted(port.nodes(), key=lambda n: n.name)
    except SlurmError as exc:
        raise SlurmUnavailable(
            gettext("Slurm did not answer (%(what)s): %(why)s", what="nodes", why=str(exc))
        ) from exc
