"""Second pass of inventory loading: schema-checked dicts → dataclasses, with cross-checks.

Expands ``count:`` entries and node ranges, applies top-level defaults (``shards_per_gpu``,
``device_dir``), allocates vNPU ids and reports every problem with the path of the YAML entry
that caused it, not of the device it expanded into.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from functools import partial
from typing import Any, TypeVar

from gres.errors import InventoryError
from gres.hostlist import expand_range
from gres.model import TEMPLATES, Accel, Gpu, Inventory, NodeInventory, Npu, Vnpu
from gres.naming import (
    ACCEL_KINDS,
    DEFAULT_DEVICE_DIR,
    DEFAULT_SHARDS_PER_GPU,
    NODE_NAME_RE,
    RESERVED_NODE_NAMES,
    VNPU_ID_BASE,
    accel_device,
    gpu_device,
    npu_device,
    vnpu_device,
)
from gres.topology import build_topology

_D = TypeVar("_D", Gpu, Npu, Accel)


def build_inventory(data: Mapping[str, Any]) -> Inventory:
    """Build an :class:`Inventory` from data that passed the schema; raises InventoryError."""
    return _Builder(data).build()


class _Builder:
    """Turns schema-checked data into dataclasses, collecting every cross-field problem."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = data
        self.errors: list[str] = []
        self.shards = data.get("shards_per_gpu", DEFAULT_SHARDS_PER_GPU)
        self.device_dir = data.get("device_dir", DEFAULT_DEVICE_DIR)

    def error(self, path: str, message: str) -> None:
        self.errors.append(f"{path}: {message}")

    def build(self) -> Inventory:
        nodes: list[NodeInventory] = []
        first_seen: dict[str, int] = {}
        for i, entry in enumerate(self.data["nodes"]):
            path = f"nodes[{i}]"
            for name in self._names(entry["name"], f"{path}.name"):
                if name in first_seen:
                    where = first_seen[name]
                    self.error(f"{path}.name", f"duplicate node name {name!r} (see nodes[{where}])")
                    continue
                first_seen[name] = i
                nodes.append(self._node(name, entry, path))
        devices = {
            n.name: {
                "gpu": frozenset(g.index for g in n.gpus),
                "npu": frozenset(c.index for c in n.npus),
            }
            for n in nodes
        }
        topology, problems = build_topology(self.data, devices)
        self.errors += problems
        if self.errors:
            # A node range repeats its entry's problems once per node; report each once.
            raise InventoryError(list(dict.fromkeys(self.errors)))
        return Inventory(nodes=tuple(nodes), topology=topology)

    def _names(self, raw: str, path: str) -> list[str]:
        try:
            names = expand_range(raw)
        except ValueError as exc:
            self.error(path, str(exc))
            return []
        good = []
        for name in names:
            if not NODE_NAME_RE.match(name):
                self.error(path, f"{name!r} is not a valid Slurm node name")
            elif name.lower() in RESERVED_NODE_NAMES:
                self.error(path, f"{name!r} is reserved by Slurm")
            else:
                good.append(name)
        return good

    def _node(self, name: str, entry: Mapping[str, Any], path: str) -> NodeInventory:
        cpus = entry["cpus"]
        sockets = entry.get("sockets", 1)
        threads = entry.get("threads_per_core", 1)
        cores = entry.get("cores_per_socket")
        if cores is None:
            cores = max(1, cpus // (sockets * threads))
            if cores * sockets * threads != cpus:
                self.error(
                    f"{path}.cores_per_socket",
                    f"cannot be derived: {cpus} CPUs do not split evenly over {sockets} "
                    f"sockets x {threads} threads per core; give it",
                )
        elif cpus not in (sockets * cores * threads, sockets * cores):
            self.error(
                f"{path}.cpus",
                f"must equal sockets*cores_per_socket*threads_per_core "
                f"({sockets * cores * threads}) or sockets*cores_per_socket ({sockets * cores})",
            )
        ddir = entry.get("device_dir", self.device_dir)
        gpus = self._devices(entry.get("gpus") or [], f"{path}.gpus", ddir, _make_gpu, gpu_device)
        npus = self._devices(entry.get("npus") or [], f"{path}.npus", ddir, _make_npu, npu_device)
        for j, npu_entry in enumerate(entry.get("npus") or []):
            for t in TEMPLATES.values():
                if npu_entry["model"].endswith(f"_{t.suffix}"):
                    self.error(f"{path}.npus[{j}].model", f"'_{t.suffix}' is kept for vNPU types")
        vnpus = self._vnpus(entry.get("vnpus") or [], f"{path}.vnpus", ddir, npus)
        accels: list[tuple[Accel, str]] = []
        for kind in ACCEL_KINDS:
            accels += self._devices(
                entry.get(f"{kind}s") or [],
                f"{path}.{kind}s",
                ddir,
                partial(_make_accel, kind),
                partial(accel_device, kind),
            )
        self._check_unique_devices([*gpus, *npus, *vnpus, *accels])
        return NodeInventory(
            name=name,
            cpus=cpus,
            sockets=sockets,
            cores_per_socket=cores,
            threads_per_core=threads,
            memory_mb=entry["memory_mb"],
            features=tuple(sorted(set(entry.get("features") or []))),
            gpus=tuple(sorted((g for g, _ in gpus), key=lambda g: g.index)),
            npus=tuple(sorted((n for n, _ in npus), key=lambda n: n.index)),
            vnpus=tuple(sorted((v for v, _ in vnpus), key=lambda v: v.vnpu_id)),
            shards_per_gpu=entry.get("shards_per_gpu", self.shards),
            accels=tuple(sorted((a for a, _ in accels), key=_accel_order)),
        )

    def _devices(
        self,
        entries: list[Mapping[str, Any]],
        path: str,
        ddir: str,
        make: Callable[[Mapping[str, Any], int, str], _D],
        default_device: Callable[[str, int], str],
    ) -> list[tuple[_D, str]]:
        """Expand ``count:`` entries into devices, each remembered with its entry's path."""
        out: list[tuple[_D, str]] = []
        seen: dict[int, str] = {}
        next_index = 0
        for j, entry in enumerate(entries):
            epath = f"{path}[{j}]"
            count = entry.get("count", 1)
            start = entry.get("index", next_index)
            for key in ("device", "uuid"):
                if key in entry and count != 1:
                    self.error(f"{epath}.{key}", "only allowed on an entry with count 1")
            for index in range(start, start + count):
                if index in seen:
                    self.error(
                        f"{epath}.index", f"device {index} is already listed at {seen[index]}"
                    )
                    continue
                seen[index] = epath
                device = entry.get("device") if count == 1 else None
                out.append((make(entry, index, device or default_device(ddir, index)), epath))
            next_index = start + count
        return out

    def _vnpus(
        self,
        entries: list[Mapping[str, Any]],
        path: str,
        ddir: str,
        npus: list[tuple[Npu, str]],
    ) -> list[tuple[Vnpu, str]]:
        models = {n.index: n.model for n, _ in npus}
        used: Counter[int] = Counter()
        share: dict[int, Fraction] = {}
        out: list[tuple[Vnpu, str]] = []
        next_id = VNPU_ID_BASE
        for j, entry in enumerate(entries):
            epath = f"{path}[{j}]"
            count = entry.get("count", 1)
            start = entry.get("id", next_id)
            next_id = start + count
            template = TEMPLATES.get(entry["template"])
            if template is None:
                known = ", ".join(sorted(TEMPLATES))
                self.error(
                    f"{epath}.template", f"unknown template {entry['template']!r} (known: {known})"
                )
                continue
            npu = entry["npu"]
            if npu not in models:
                self.error(f"{epath}.npu", f"this node has no NPU {npu}")
                continue
            if models[npu] not in template.models:
                allowed = ", ".join(sorted(template.models))
                self.error(
                    f"{epath}.template",
                    f"{template.name} is not available on {models[npu]} NPUs (only {allowed})",
                )
                continue
            share[npu] = share.get(npu, Fraction(0)) + template.fraction * count
            if share[npu] > 1:
                self.error(
                    f"{epath}.count",
                    f"NPU {npu} would be split into {share[npu]} of a card (at most 1)",
                )
            if "device" in entry and count != 1:
                self.error(f"{epath}.device", "only allowed on an entry with count 1")
            for vid in range(start, start + count):
                used[vid] += 1
                if used[vid] > 1:
                    self.error(f"{epath}.id", f"vNPU id {vid} is used twice")
                    continue
                device = entry.get("device") if count == 1 else None
                out.append((Vnpu(npu, template.name, vid, device or vnpu_device(ddir, vid)), epath))
        return out

    def _check_unique_devices(
        self, devices: Sequence[tuple[Gpu | Npu | Vnpu | Accel, str]]
    ) -> None:
        """Two GRES on one device file would let Slurm hand the same card to two jobs."""
        owner: dict[str, str] = {}
        for dev, epath in devices:
            name = posixpath.normpath(dev.device)
            if name in owner:
                self.error(f"{epath}.device", f"{dev.device} is already used by {owner[name]}")
            else:
                owner[name] = epath


def _make_gpu(entry: Mapping[str, Any], index: int, device: str) -> Gpu:
    return Gpu(
        index=index,
        model=entry["model"],
        memory_mib=entry.get("memory_mib", 0),
        device=device,
        uuid=entry.get("uuid"),
        mig=entry.get("mig", False),
    )


def _make_npu(entry: Mapping[str, Any], index: int, device: str) -> Npu:
    return Npu(
        index=index, model=entry["model"], device=device, memory_mib=entry.get("memory_mib", 0)
    )


def _make_accel(kind: str, entry: Mapping[str, Any], index: int, device: str) -> Accel:
    return Accel(
        kind=kind,
        index=index,
        model=entry["model"],
        device=device,
        memory_mib=entry.get("memory_mib", 0),
    )


def _accel_order(accel: Accel) -> tuple[int, int]:
    return ACCEL_KINDS.index(accel.kind), accel.index
