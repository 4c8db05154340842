"""How each topology maps onto Slurm: job components, processes per node, launch template.

* ``single``: one process, one node.
* ``multi_gpu``: one node, one process per card (``torchrun --standalone``).
* ``ddp``: N nodes, one ``torchrun`` per node started by ``srun``; rendezvous at the first
  node's address, node rank from ``SLURM_NODEID``.
* ``mpi``: the batch step is the launcher (``mpirun``), ranks run on every allocated node.
* ``ps_worker``, ``master_worker``, ``scheduler_server_worker``: a heterogeneous job, one
  request component per role, so Slurm starts all roles together or none; each replica has a node
  allocation (one task) of its own and learns every role's addresses from its environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jobspec.compute import card_types
from jobspec.model import Spec, TopologyKind
from jobspec.options import ClusterConfig, component, job_request, partition_for
from slurm_plugins.client.job import Component, JobRequest

#: Roles whose end ends the job; the other roles (servers) are stopped then.
PRIMARY_ROLES: Mapping[TopologyKind, tuple[str, ...]] = {
    TopologyKind.PS_WORKER: ("worker",),
    TopologyKind.MASTER_WORKER: ("master", "worker"),
    TopologyKind.SCHEDULER_SERVER_WORKER: ("worker",),
}


@dataclass(frozen=True, slots=True)
class RoleLaunch:
    name: str
    group: int
    replicas: int
    command: tuple[str, ...]  # empty: the spec's program


@dataclass(frozen=True, slots=True)
class Layout:
    """What the renderer needs: the job request and the launch template with its values."""

    template: str
    request: JobRequest
    context: dict[str, Any] = field(default_factory=dict)


def layout(spec: Spec, cfg: ClusterConfig, deps: Mapping[str, int | str]) -> Layout:
    kind = spec.topology.kind
    if kind.heterogeneous:
        return _heterogeneous(spec, cfg, deps)
    res = spec.resources
    single = kind in (TopologyKind.SINGLE, TopologyKind.MULTI_GPU)
    per_node = 1 if kind is not TopologyKind.MPI else res.processes_per_node
    only = component(
        spec,
        res,
        partition=partition_for(res, spec.partition, cfg),
        nodes=res.nodes,
        tasks_per_node=per_node,
        single_task=single,
        cards=card_types(res, cfg.card_types),
    )
    template = "jupyter.sh.j2" if spec.jupyter is not None else f"{kind.value}.sh.j2"
    return Layout(
        template=template,
        request=job_request(spec, (only,), deps),
        context={"processes_per_node": res.processes_per_node},
    )


def _heterogeneous(spec: Spec, cfg: ClusterConfig, deps: Mapping[str, int | str]) -> Layout:
    components: list[Component] = []
    roles: list[RoleLaunch] = []
    for group, role in enumerate(spec.topology.roles):
        components.append(
            component(
                spec,
                role.resources,
                partition=partition_for(role.resources, role.partition or spec.partition, cfg),
                nodes=role.replicas,
                tasks_per_node=1,
                single_task=False,
                with_nodes=False,
                cards=card_types(
                    role.resources, cfg.card_types, path=f"topology.roles.{role.name}.resources"
                ),
            )
        )
        roles.append(RoleLaunch(role.name, group, role.replicas, role.command))
    return Layout(
        template="roles.sh.j2",
        request=job_request(spec, tuple(components), deps),
        context={"roles": roles, "primary": PRIMARY_ROLES[spec.topology.kind]},
    )
