"""Where the portal's proxies (Jupyter, inference replicas) may connect: the rules, pure.

A job's own files say on which port its server listens, but the job's user writes them, so
they may name anything: another host, or a service on the node (slurmrestd, a ``/metrics``,
the database). The portal therefore takes only the port from such a file, and only a port
inside the range the site reserves for jobs' servers (``PROXY_PORT_RANGE``, clear of every
port a service of the site listens on); the host is the address Slurm has for the node the
job runs on (its NodeAddr, else its name), never one the job wrote.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from slurm_plugins.client.models import Job, Node

#: The default range: above the ports the lab and a site's services use (Slurm's 6817-6820,
#: slurmd's, MariaDB's, the metrics ports, the portal's, jobs' rendezvous blocks from 20000),
#: also with the lab's port offsets, and below Linux's default ephemeral ports' top.
DEFAULT_PORT_RANGE = (50000, 59999)


@dataclass(frozen=True, slots=True)
class PortRange:
    """The ports ``low`` to ``high`` (both included) that jobs' servers may listen on."""

    low: int
    high: int

    def __post_init__(self) -> None:
        if not 1024 <= self.low <= self.high <= 65535:
            raise ValueError(f"not a port range of unprivileged ports: {self.low}-{self.high}")

    def __contains__(self, port: object) -> bool:
        return type(port) is int and self.low <= port <= self.high

    def __str__(self) -> str:
        return f"{self.low}-{self.high}"


def port_range(value: Any) -> PortRange:
    """The setting's value: ``"50000-59999"``, or a pair ``[50000, 59999]``."""
    if isinstance(value, str):
        low, sep, high = value.partition("-")
        if not sep:
            raise ValueError(f"PROXY_PORT_RANGE: not LOW-HIGH: {value!r}")
        return PortRange(int(low.strip()), int(high.strip()))
    if isinstance(value, list | tuple) and len(value) == 2:
        return PortRange(int(value[0]), int(value[1]))
    raise ValueError(f"PROXY_PORT_RANGE: not LOW-HIGH nor a pair: {value!r}")


def node_address(job: Job, nodes: Iterable[Node]) -> str | None:
    """The address of the one node ``job`` runs on as Slurm has it (NodeAddr, else the node's
    name); None for a job on no node or on several (a server job holds a single node)."""
    if job.node_count not in (0, 1) or not job.nodes or "," in job.nodes or "[" in job.nodes:
        return None
    for node in nodes:
        if node.name == job.nodes:
            return node.address or node.name
    return None


def upstream(job: Job, nodes: Iterable[Node], port: object, ports: PortRange) -> str | None:
    """``http://ADDRESS:PORT`` for the server ``job`` says it runs on ``port``; None when the
    port lies outside ``ports`` or Slurm places the job on no single node."""
    if port not in ports:
        return None
    host = node_address(job, nodes)
    if host is None:
        return None
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
