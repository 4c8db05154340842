"""Render Slurm 22.05 configuration from an inventory: gres.conf, node lines, the TaskProlog.

Pure functions, deterministic output (nodes in inventory order, devices by index, types
sorted), so a re-render that changes nothing leaves the files byte-identical and the Ansible
roles and the lab can compare them. This is the only place GRES lines are derived.

How devices map onto Slurm (verified on the lab cluster, see docs/gres.md):

* GPUs are ``Name=gpu Type=<model> File=/dev/nvidiaN``; each GPU is also split into
  ``shards_per_gpu`` shards with one ``Name=shard Count=<gpus * shards>`` line per node, which
  Slurm 22.05 spreads evenly over the node's GPUs. A shard line on a node without GPUs makes
  slurmd exit, so there is never one.
* Ascend NPUs are a typed custom GRES ``npu``: whole cards as ``Type=<model>``, vNPUs as
  ``Type=<model>_<template suffix>``, physical cards first. Slurm exports no variable for a
  custom GRES, so the TaskProlog maps the job's GRES indexes to device numbers.
* Cambricon MLUs, Hygon DCUs and Kunlunxin XPUs are typed custom GRES ``mlu``, ``dcu``,
  ``xpu`` with one device file per card; the TaskProlog exports ``MLU_VISIBLE_DEVICES``,
  ``HIP_VISIBLE_DEVICES`` and ``XPU_VISIBLE_DEVICES`` from them the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gres.hostlist import compress_paths
from gres.inventory import Inventory, NodeInventory
from gres.naming import ACCEL_KINDS, GENERATED_HEADER
from gres.taskprolog import render_task_prolog_script

HEADER = GENERATED_HEADER

#: Node line keys we write ourselves; ``extra`` must not repeat them.
_OWN_KEYS = frozenset(
    {
        "NodeName",
        "CPUs",
        "Boards",
        "SocketsPerBoard",
        "CoresPerSocket",
        "ThreadsPerCore",
        "RealMemory",
        "Gres",
        "Feature",
        "Features",
    }
)


@dataclass(frozen=True, slots=True)
class NpuRecord:
    """One npu GRES device of a node, in Slurm GRES index order."""

    gres_type: str
    device: str
    number: int  # what goes into ASCEND_RT_VISIBLE_DEVICES: physical id or vNPU id


def npu_records(node: NodeInventory) -> list[NpuRecord]:
    """The node's npu devices in the order gres.conf lists them, which is Slurm's index order.

    Whole NPUs by physical id, then vNPUs by vNPU id. gres.conf lines and the TaskProlog map are
    both built from this one list, so they cannot disagree.
    """
    whole = [NpuRecord(n.model, n.device, n.index) for n in node.whole_npus]
    virtual = [NpuRecord(node.vnpu_type(v), v.device, v.vnpu_id) for v in node.vnpus]
    return whole + virtual


def npu_index_map(node: NodeInventory) -> list[int]:
    """GRES index → device number for ASCEND_RT_VISIBLE_DEVICES on ``node``."""
    return [r.number for r in npu_records(node)]


def _typed_runs(items: Sequence[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    """Consecutive (type, device) pairs of the same type, grouped, order kept."""
    runs: list[tuple[str, list[str]]] = []
    for gres_type, device in items:
        if runs and runs[-1][0] == gres_type:
            runs[-1][1].append(device)
        else:
            runs.append((gres_type, [device]))
    return runs


def _gres_conf_lines(node: NodeInventory) -> list[str]:
    lines: list[str] = []
    prefix = f"NodeName={node.name}"
    for model, devices in _typed_runs([(g.model, g.device) for g in node.gpus]):
        lines += [f"{prefix} Name=gpu Type={model} File={f}" for f in compress_paths(devices)]
    if node.gpus:
        lines.append(f"{prefix} Name=shard Count={node.shard_count}")
    records = [(r.gres_type, r.device) for r in npu_records(node)]
    for gres_type, devices in _typed_runs(records):
        lines += [f"{prefix} Name=npu Type={gres_type} File={f}" for f in compress_paths(devices)]
    for kind in node.accel_kinds:
        cards = [(a.model, a.device) for a in node.accels_of(kind)]
        for model, devices in _typed_runs(cards):
            files = compress_paths(devices)
            lines += [f"{prefix} Name={kind} Type={model} File={f}" for f in files]
    return lines


def render_gres_conf(inv: Inventory) -> str:
    """gres.conf for all nodes. ``AutoDetect=off``: the inventory is the source of truth."""
    out = [HEADER.rstrip("\n"), "AutoDetect=off"]
    for node in inv.nodes:
        out += _gres_conf_lines(node)
    return "\n".join(out) + "\n"


def node_gres(node: NodeInventory) -> list[str]:
    """``Gres=`` items of a node: gpus by type, shards, whole NPUs by type, vNPUs by type."""
    items = [f"gpu:{m}:{sum(g.model == m for g in node.gpus)}" for m in node.gpu_models]
    if node.gpus:
        items.append(f"shard:{node.shard_count}")
    types = [r.gres_type for r in npu_records(node)]
    items += [f"npu:{t}:{types.count(t)}" for t in sorted(set(types))]
    for kind in node.accel_kinds:
        cards = node.accels_of(kind)
        items += [f"{kind}:{m}:{sum(a.model == m for a in cards)}" for m in node.accel_models(kind)]
    return items


def node_features(node: NodeInventory) -> list[str]:
    """Configured features plus device models and the ``gpu``/``npu``/``cpu`` class tokens.

    Users can then write ``--constraint=a100`` or ``--constraint=npu`` without the operator
    keeping features and devices in step by hand.
    """
    accel_models = {a.model for a in node.accels}
    return sorted(
        {*node.features, *node.gpu_models, *node.npu_models, *accel_models, *node.device_classes}
    )


def _check_extra(inv: Inventory, extra: Mapping[str, Mapping[str, str]]) -> None:
    unknown = sorted(set(extra) - set(inv.names))
    if unknown:
        raise ValueError(f"extra node settings for nodes not in the inventory: {unknown}")
    for node, settings in extra.items():
        for key, value in settings.items():
            if not key.isascii() or not key.isalpha():
                raise ValueError(f"{node}: {key!r} is not a slurm.conf node keyword")
            if key in _OWN_KEYS:
                raise ValueError(f"{node}: {key} is rendered from the inventory")
            text = str(value)
            if not text or any(c.isspace() or c in "#=" or not c.isprintable() for c in text):
                raise ValueError(f"{node}: {key}={text!r} is not a plain slurm.conf value")


def render_node_lines(inv: Inventory, extra: Mapping[str, Mapping[str, str]] | None = None) -> str:
    """``NodeName=…`` lines for slurm.conf, one per node.

    ``extra`` adds per-node settings right after the name, in the given order, e.g.
    ``{"gpu1": {"NodeHostname": "localhost", "NodeAddr": "127.0.0.1", "Port": "17001"}}``.
    """
    extra = extra or {}
    _check_extra(inv, extra)
    lines = []
    for node in inv.nodes:
        parts = [f"NodeName={node.name}"]
        parts += [f"{k}={v}" for k, v in extra.get(node.name, {}).items()]
        parts += [
            f"CPUs={node.cpus}",
            "Boards=1",
            f"SocketsPerBoard={node.sockets}",
            f"CoresPerSocket={node.cores_per_socket}",
            f"ThreadsPerCore={node.threads_per_core}",
            f"RealMemory={node.memory_mb}",
        ]
        gres = node_gres(node)
        if gres:
            parts.append("Gres=" + ",".join(gres))
        features = node_features(node)
        if features:
            parts.append("Feature=" + ",".join(features))
        lines.append(" ".join(parts))
    return "\n".join(lines) + "\n" if lines else ""


def gres_types(inv: Inventory) -> list[str]:
    """``GresTypes=`` entries: only what some node has (``shard`` only with GPUs)."""
    names = set()
    for node in inv.nodes:
        if node.gpus:
            names |= {"gpu", "shard"}
        if node.npus:
            names.add("npu")
        names |= set(node.accel_kinds)
    return sorted(names)


def accounting_tres(inv: Inventory) -> list[str]:
    """``AccountingStorageTRES=`` GRES entries, so sacct reports typed use (card-hour billing).

    Typed TRES only appear in accounting when listed here; the order groups each GRES name with
    its types: ``gres/gpu, gres/gpu:a100, gres/shard, gres/npu, gres/npu:910b, …``.
    """
    gpu_types = sorted({m for n in inv.nodes for m in n.gpu_models})
    npu_types = sorted({r.gres_type for n in inv.nodes for r in npu_records(n)})
    out: list[str] = []
    if gpu_types:
        out += ["gres/gpu", *(f"gres/gpu:{t}" for t in gpu_types), "gres/shard"]
    if npu_types:
        out += ["gres/npu", *(f"gres/npu:{t}" for t in npu_types)]
    for kind in ACCEL_KINDS:
        types = sorted({m for n in inv.nodes for m in n.accel_models(kind)})
        if types:
            out += [f"gres/{kind}", *(f"gres/{kind}:{t}" for t in types)]
    return out


def device_maps(node: NodeInventory) -> dict[str, list[int]]:
    """GRES name → device numbers in GRES index order, for each custom GRES of ``node``."""
    maps = {"npu": npu_index_map(node)} if node.npus else {}
    for kind in node.accel_kinds:
        maps[kind] = [a.index for a in node.accels_of(kind)]
    return maps


def render_task_prolog(inv: Inventory) -> str:
    """The TaskProlog that exports each runtime's visibility variable (see taskprolog)."""
    maps = {n.name: m for n in inv.nodes if (m := device_maps(n))}
    return render_task_prolog_script(maps)


def render_all(
    inv: Inventory, extra: Mapping[str, Mapping[str, str]] | None = None
) -> dict[str, str]:
    """Every rendered artefact: the three files and the two slurm.conf values."""
    return {
        "gres.conf": render_gres_conf(inv),
        "nodes.conf": render_node_lines(inv, extra),
        "taskprolog.sh": render_task_prolog(inv),
        "GresTypes": ",".join(gres_types(inv)),
        "AccountingStorageTRES": ",".join(accounting_tres(inv)),
    }
