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
    "mlus",
    "mlu_type",
    "dcus",
    "dcu_type",
    "xpus",
    "xpu_type",
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
        _check_same_switch(data, kind, topology.get("roles", {}))
        for key in _ROLE_ONLY:
            if key in res:
                raise ValidationError(
                    f"a {kind} job sets resources per role (topology.roles.<role>.resources); "
                    "only time belongs here",
                    f"resources.{key}",
                )
        return
    _check_same_switch(data, kind, topology.get("roles", {}))
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
        whole = any(res.get(k) for k in ("npus", "mlus", "dcus", "xpus"))
        if not (whole or (gpus >= 1 and gpus.denominator == 1)):
            raise ValidationError(
                "multi_gpu starts one process per card: ask for whole gpus or npus",
                "resources.gpus",
            )


def _check_same_switch(data: dict[str, Any], kind: TopologyKind, roles: dict[str, Any]) -> None:
    """same_switch only means something when a part of the job spans several nodes."""
    if not data.get("affinity", {}).get("same_switch"):
        return
    if kind.heterogeneous:
        if any(r.get("replicas", 1) > 1 for r in roles.values()):
            return
        runs, where = "each role of this job runs", "a role with more than one replica"
    else:
        if data.get("resources", {}).get("nodes", 1) > 1:
            return
        runs, where = "this job runs", "resources.nodes of 2 or more"
    raise ValidationError(
        f"same_switch keeps a job's nodes under one switch, but {runs} on one node; "
        f"ask for {where} or leave same_switch out",
        "affinity.same_switch",
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
