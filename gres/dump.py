"""Inventory → YAML-format dicts: the inverse of :mod:`gres.loader`.

Runs of devices that follow the naming convention collapse into ``count:`` entries; anything
unusual (its own device path, a UUID) is written per device, so a probed host reads back into
exactly the same objects and a lab inventory stays as short as a hand-written one.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import yaml

from gres.naming import (
    ACCEL_KINDS,
    DEFAULT_DEVICE_DIR,
    DEFAULT_SHARDS_PER_GPU,
    VNPU_ID_BASE,
    accel_device,
    accel_device_name,
    gpu_device,
    npu_device,
    vnpu_device,
)
from gres.topology import topology_to_dict

if TYPE_CHECKING:
    from gres.model import Accel, Gpu, Inventory, NodeInventory, Npu, Vnpu


def inventory_to_yaml(inv: Inventory) -> str:
    """YAML with one node per block and one device entry per line, as people write it."""
    data = inventory_to_dict(inv)
    for node in data["nodes"]:
        for key in ("gpus", "npus", "vnpus", *(f"{k}s" for k in ACCEL_KINDS)):
            if key in node:
                node[key] = [_FlowDict(e) for e in node[key]]
        if "features" in node:
            node["features"] = _FlowList(node["features"])
    for entry in data.get("switches", []) + data.get("islands", []):
        for key in ("nodes", "switches", "devices"):
            if key in entry:
                entry[key] = _FlowList(entry[key])
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True)


class _FlowDict(dict[str, Any]):
    pass


class _FlowList(list[Any]):
    pass


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(
    _FlowDict, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", v, flow_style=True)
)
_Dumper.add_representer(
    _FlowList, lambda d, v: d.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=True)
)
# --- dumping -------------------------------------------------------------------------------
# The dump is the inverse of gres.loader: runs of devices that follow the naming convention
# collapse into ``count:`` entries, anything unusual (own device path, UUID, MIG) is written
# out per device, so a probed host reads back into exactly the same objects.


def _conventional_dir(device: str, expected_name: str) -> str | None:
    head, tail = posixpath.split(device)
    return head if tail == expected_name else None


def _device_dir_of(node: NodeInventory) -> str | None:
    """The directory most of the node's device files sit in under their conventional names."""
    found = [
        *(_conventional_dir(g.device, f"nvidia{g.index}") for g in node.gpus),
        *(_conventional_dir(n.device, f"davinci{n.index}") for n in node.npus),
        *(_conventional_dir(v.device, f"vdavinci{v.vnpu_id}") for v in node.vnpus),
        *(_accel_dir(a) for a in node.accels),
    ]
    dirs = [d for d in found if d is not None]
    if not dirs:
        return None
    return min(set(dirs), key=lambda d: (-dirs.count(d), d))


def inventory_to_dict(inv: Inventory) -> dict[str, Any]:
    node_dirs = [_device_dir_of(n) for n in inv.nodes]
    used = [d for d in node_dirs if d is not None]
    top = min(set(used), key=lambda d: (-used.count(d), d)) if used else DEFAULT_DEVICE_DIR
    out: dict[str, Any] = {}
    if top != DEFAULT_DEVICE_DIR:
        out["device_dir"] = top
    out["nodes"] = [
        node_to_dict(n, d, inherited=top) for n, d in zip(inv.nodes, node_dirs, strict=True)
    ]
    out.update(topology_to_dict(inv.topology))
    return out


def node_to_dict(
    node: NodeInventory, device_dir: str | None = None, inherited: str = DEFAULT_DEVICE_DIR
) -> dict[str, Any]:
    """One node; ``device_dir`` is written only where it differs from the ``inherited`` one."""
    if device_dir is None:
        device_dir = _device_dir_of(node)
    out: dict[str, Any] = {
        "name": node.name,
        "cpus": node.cpus,
        "sockets": node.sockets,
        "cores_per_socket": node.cores_per_socket,
        "threads_per_core": node.threads_per_core,
        "memory_mb": node.memory_mb,
    }
    if node.features:
        out["features"] = list(node.features)
    if node.shards_per_gpu != DEFAULT_SHARDS_PER_GPU:
        out["shards_per_gpu"] = node.shards_per_gpu
    ddir = device_dir or inherited
    if ddir != inherited:
        out["device_dir"] = ddir
    for key, entries in (
        ("gpus", _gpu_entries(node.gpus, ddir)),
        ("npus", _npu_entries(node.npus, ddir)),
        ("vnpus", _vnpu_entries(node.vnpus, ddir)),
        *((f"{k}s", _accel_entries(node.accels_of(k), ddir)) for k in ACCEL_KINDS),
    ):
        if entries:
            out[key] = [_ordered(e) for e in entries]
    return out


_KEY_ORDER = ("model", "npu", "template", "count", "index", "id", "memory_mib", "mig", "device")


def _ordered(entry: dict[str, Any]) -> dict[str, Any]:
    """Entries read best as ``{model, count, …}`` whatever order they were assembled in."""
    rank = {k: i for i, k in enumerate(_KEY_ORDER)}
    return dict(sorted(entry.items(), key=lambda kv: rank.get(kv[0], len(rank))))


def _gpu_entries(gpus: tuple[Gpu, ...], ddir: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    next_index, last = 0, None
    for g in gpus:
        plain = g.uuid is None and g.device == gpu_device(ddir, g.index)
        key = (g.model, g.memory_mib, g.mig)
        if plain and last is not None and last[0] == key and last[1] + 1 == g.index:
            entries[-1]["count"] = entries[-1].get("count", 1) + 1
            last = (key, g.index)
        else:
            entry: dict[str, Any] = {"model": g.model}
            if g.index != next_index:
                entry["index"] = g.index
            if g.memory_mib:
                entry["memory_mib"] = g.memory_mib
            if g.mig:
                entry["mig"] = True
            if not plain:
                entry["device"] = g.device
                if g.uuid is not None:
                    entry["uuid"] = g.uuid
            entries.append(entry)
            last = (key, g.index) if plain else None
        next_index = g.index + 1
    return entries


def _npu_entries(npus: tuple[Npu, ...], ddir: str) -> list[dict[str, Any]]:
    return _card_entries(npus, lambda n: npu_device(ddir, n.index))


def _card_entries(
    cards: Sequence[Npu | Accel], device_of: Callable[[Any], str]
) -> list[dict[str, Any]]:
    """NPU or MLU/DCU/XPU entries, runs of like cards on their conventional device files
    written as one entry with a count."""
    entries: list[dict[str, Any]] = []
    next_index, last = 0, None
    for n in cards:
        plain = n.device == device_of(n)
        key = (n.model, n.memory_mib)
        if plain and last is not None and last[0] == key and last[1] + 1 == n.index:
            entries[-1]["count"] = entries[-1].get("count", 1) + 1
            last = (key, n.index)
        else:
            entry: dict[str, Any] = {"model": n.model}
            if n.index != next_index:
                entry["index"] = n.index
            if n.memory_mib:
                entry["memory_mib"] = n.memory_mib
            if not plain:
                entry["device"] = n.device
            entries.append(entry)
            last = (key, n.index) if plain else None
        next_index = n.index + 1
    return entries


def _vnpu_entries(vnpus: tuple[Vnpu, ...], ddir: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    next_id, last = VNPU_ID_BASE, None
    for v in vnpus:
        plain = v.device == vnpu_device(ddir, v.vnpu_id)
        key = (v.npu_index, v.template)
        if plain and last is not None and last[0] == key and last[1] + 1 == v.vnpu_id:
            entries[-1]["count"] = entries[-1].get("count", 1) + 1
            last = (key, v.vnpu_id)
        else:
            entry: dict[str, Any] = {"npu": v.npu_index, "template": v.template}
            if v.vnpu_id != next_id:
                entry["id"] = v.vnpu_id
            if not plain:
                entry["device"] = v.device
            entries.append(entry)
            last = (key, v.vnpu_id) if plain else None
        next_id = v.vnpu_id + 1
    return entries


def _accel_dir(accel: Accel) -> str | None:
    """The device directory of a card under its conventional name (``/dev`` for a DCU whose
    render node is in ``/dev/dri``)."""
    found = _conventional_dir(accel.device, accel_device_name(accel.kind, accel.index))
    if found is not None and accel.kind == "dcu" and found == f"{DEFAULT_DEVICE_DIR}/dri":
        return DEFAULT_DEVICE_DIR
    return found


def _accel_entries(accels: tuple[Accel, ...], ddir: str) -> list[dict[str, Any]]:
    return _card_entries(accels, lambda a: accel_device(a.kind, ddir, a.index))
