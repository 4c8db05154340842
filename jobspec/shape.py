"""Checks that need several fields at once: does the topology fit the resources and program?"""

from __future__ import annotations

from typing import Any

from marshmallow import ValidationError

from jobspec.model import TopologyKind

_ROLE_ONLY = (
    "gpus",
    "gpu_type",
    "npus",
    "npu_type",
    "cpus",
    "memory",
    "nodes",
    "tasks_per_node",
    "precision",
    "min_score",
)


def check_shape(data: dict[str, Any]) -> None:
    """Raise ValidationError (keyed by field path) when the parts of a spec do not fit."""
    topology = data.get("topology") or {"kind": TopologyKind.SINGLE}
    kind: TopologyKind = topology["kind"]
    res: dict[str, Any] = data.get("resources", {})
    _check_program(data, kind, topology.get("roles", {}))
    if "jupyter" in data and kind is not TopologyKind.SINGLE:
        raise ValidationError("a Jupyter job is a single process", "topology.kind")
    if kind.heterogeneous:
        if data.get("affinity", {}).get("nodes"):
            raise ValidationError(
                "roles cannot share one node list; use affinity.exclude or a partition per role",
                "affinity.nodes",
            )
        for key in _ROLE_ONLY:
            if key in res:
                raise ValidationError(
                    f"a {kind} job sets resources per role (topology.roles.<role>.resources); "
                    "only time belongs here",
                    f"resources.{key}",
                )
        return
    nodes, tasks = res.get("nodes", 1), res.get("tasks_per_node")
    if kind in (TopologyKind.SINGLE, TopologyKind.MULTI_GPU) and nodes != 1:
        raise ValidationError(
            f"{kind} runs on one node; use ddp or mpi for several", "resources.nodes"
        )
    if kind is TopologyKind.SINGLE and tasks not in (None, 1):
        raise ValidationError(
            "single runs one process; use multi_gpu, ddp or mpi for more",
            "resources.tasks_per_node",
        )
    if kind is TopologyKind.MULTI_GPU:
        gpus = res.get("gpus", 0)
        if not (res.get("npus") or (gpus >= 1 and gpus.denominator == 1)):
            raise ValidationError(
                "multi_gpu starts one process per card: ask for whole gpus or npus",
                "resources.gpus",
            )


def _check_program(data: dict[str, Any], kind: TopologyKind, roles: dict[str, Any]) -> None:
    has = [k for k in ("command", "script") if k in data]
    if "jupyter" in data:
        if has:
            raise ValidationError(
                "a Jupyter job runs Jupyter; leave out command and script", has[0]
            )
        return
    if len(has) > 1:
        raise ValidationError("give command or script, not both", "script")
    if has:
        return
    if kind.heterogeneous and roles and all("command" in r for r in roles.values()):
        return
    where = "command (or a command for every role)" if kind.heterogeneous else "command"
    raise ValidationError(
        f"missing: give {where} (a program and its arguments) or script (bash)", "command"
    )
