"""Validated mappings → frozen specs, and specs → plain data (JSON/YAML) that loads back equal."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from gres.naming import ACCEL_KINDS
from jobspec.model import (
    Affinity,
    Jupyter,
    Mount,
    Notify,
    Resources,
    RestartPolicy,
    Role,
    Spec,
    Topology,
    TopologyKind,
)


def build_spec(d: dict[str, Any]) -> Spec:
    """A :class:`Spec` from what :class:`~jobspec.schema.SpecSchema` loaded."""
    topo = d.get("topology") or {"kind": TopologyKind.SINGLE}
    roles = topo.get("roles", {})
    return Spec(
        name=d["name"],
        command=tuple(d.get("command", ())),
        script=d.get("script"),
        project=d.get("project"),
        partition=d.get("partition"),
        resources=_resources(d.get("resources", {})),
        priority=d["priority"],
        topology=Topology(
            kind=topo["kind"],
            roles=tuple(
                Role(
                    name=name,
                    replicas=roles[name]["replicas"],
                    resources=_resources(roles[name].get("resources", {})),
                    command=tuple(roles[name].get("command", ())),
                    partition=roles[name].get("partition"),
                )
                for name in topo["kind"].roles
            ),
        ),
        env=dict(d.get("env", {})),
        workdir=d.get("workdir"),
        outputs=d.get("outputs"),
        conda=d.get("conda"),
        modules=tuple(d.get("modules", ())),
        mounts=tuple(Mount(**m) for m in d.get("mounts", ())),
        restart=RestartPolicy(**d["restart"]) if "restart" in d else RestartPolicy(),
        dependencies=tuple(d.get("dependencies", ())),
        affinity=Affinity(
            features=tuple(d.get("affinity", {}).get("features", ())),
            nodes=tuple(d.get("affinity", {}).get("nodes", ())),
            exclude=tuple(d.get("affinity", {}).get("excluded", ())),
            anti_affinity_group=d.get("affinity", {}).get("anti_affinity_group"),
            same_switch=d.get("affinity", {}).get("same_switch", False),
            max_wait_min=d.get("affinity", {}).get("max_wait"),
        ),
        notify=Notify(d["notify"]["email"], tuple(d["notify"]["events"]))
        if "notify" in d
        else None,
        jupyter=Jupyter(**d["jupyter"]) if "jupyter" in d else None,
    )


def _resources(r: dict[str, Any]) -> Resources:
    kind = next((k for k in ACCEL_KINDS if r.get(f"{k}s")), None)
    return Resources(
        gpus=r.get("gpus", Fraction(0)),
        gpu_type=r.get("gpu_type"),
        npus=r.get("npus", 0),
        npu_type=r.get("npu_type"),
        accel_kind=kind,
        accels=r.get(f"{kind}s", 0) if kind else 0,
        accel_type=r.get(f"{kind}_type") if kind else None,
        cpus=r.get("cpus"),
        memory_mb=r.get("memory"),
        nodes=r.get("nodes", 1),
        tasks_per_node=r.get("tasks_per_node"),
        time_min=r.get("time"),
        precision=r.get("precision"),
        min_score=r.get("min_score"),
    )


# --------------------------------------------------------------------- dumping
def spec_to_data(spec: Spec) -> dict[str, Any]:
    """Plain data for a spec, without defaults; :func:`~jobspec.schema.load_spec` reads it back."""
    out: dict[str, Any] = {"name": spec.name}
    if spec.command:
        out["command"] = list(spec.command)
    if spec.script is not None:
        out["script"] = spec.script
    _put(out, "project", spec.project)
    _put(out, "partition", spec.partition)
    if res := resources_to_data(spec.resources):
        out["resources"] = res
    out["priority"] = spec.priority.value
    if spec.topology.kind is not TopologyKind.SINGLE:
        out["topology"] = {"kind": spec.topology.kind.value}
        if spec.topology.roles:
            out["topology"]["roles"] = {r.name: _role(r) for r in spec.topology.roles}
    if spec.env:
        out["env"] = dict(spec.env)
    _put(out, "workdir", spec.workdir)
    _put(out, "outputs", spec.outputs)
    _put(out, "conda", spec.conda)
    if spec.modules:
        out["modules"] = list(spec.modules)
    if spec.mounts:
        out["mounts"] = [
            {"name": m.name, "path": m.path, "kind": m.kind.value, "mode": m.mode.value}
            for m in spec.mounts
        ]
    if spec.restart != RestartPolicy():
        r = spec.restart
        out["restart"] = {"on_failure": r.on_failure}
        _put(out["restart"], "max_restarts", r.max_restarts)
        _put(out["restart"], "on_node_failure", r.on_node_failure)
    if spec.dependencies:
        deps: dict[str, list[int | str]] = {}
        for dep in spec.dependencies:
            deps.setdefault(dep.type.value, []).append(dep.on)
        out["dependencies"] = deps
    if aff := _affinity(spec.affinity):
        out["affinity"] = aff
    if spec.notify is not None:
        out["notify"] = {
            "email": spec.notify.email,
            "events": [e.value for e in spec.notify.events],
        }
    if spec.jupyter is not None:
        out["jupyter"] = {"app": spec.jupyter.app.value}
    return out


def resources_to_data(r: Resources) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if r.gpus:
        out["gpus"] = int(r.gpus) if r.gpus.denominator == 1 else str(r.gpus)
    _put(out, "gpu_type", r.gpu_type)
    if r.npus:
        out["npus"] = r.npus
    _put(out, "npu_type", r.npu_type)
    if r.accel_kind and r.accels:
        out[f"{r.accel_kind}s"] = r.accels
        _put(out, f"{r.accel_kind}_type", r.accel_type)
    _put(out, "cpus", r.cpus)
    if r.memory_mb is not None:
        out["memory"] = f"{r.memory_mb}M"
    if r.nodes != 1:
        out["nodes"] = r.nodes
    _put(out, "tasks_per_node", r.tasks_per_node)
    _put(out, "time", r.time_min)
    _put(out, "precision", r.precision.value if r.precision else None)
    _put(out, "min_score", r.min_score)
    return out


def _role(role: Role) -> dict[str, Any]:
    out: dict[str, Any] = {"replicas": role.replicas}
    if res := resources_to_data(role.resources):
        out["resources"] = res
    if role.command:
        out["command"] = list(role.command)
    _put(out, "partition", role.partition)
    return out


def _affinity(a: Affinity) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("features", "nodes", "exclude"):
        if value := getattr(a, key):
            out[key] = list(value)
    _put(out, "anti_affinity_group", a.anti_affinity_group)
    if a.same_switch:
        out["same_switch"] = True
    _put(out, "max_wait", a.max_wait_min)
    return out


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value
