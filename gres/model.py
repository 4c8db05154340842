"""Device inventory data: what each Slurm node has, as frozen dataclasses.

Everything that renders Slurm configuration (gres.conf, node lines, the TaskProlog) reads these
classes, whether they came from a YAML file (labs, sites without probes) or from probing a host.
This module is pure data plus the derived views the renderers need; import the classes from
:mod:`gres.inventory`, which adds loading. They live here so the YAML loader can build them
without an import cycle.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from gres import dump
from gres.naming import ACCEL_KINDS, DEFAULT_SHARDS_PER_GPU, DEVICE_PATH_RE, reroot
from gres.topology import Topology


@dataclass(frozen=True, slots=True)
class VnpuTemplate:
    """One Ascend vNPU template: the share of a physical NPU it takes and its Slurm type suffix."""

    name: str
    fraction: Fraction
    suffix: str
    models: frozenset[str]


#: Supported vNPU templates (``npu-smi set -t create-vnpu -f <name>``). The Slurm type of a vNPU
#: is ``<npu model>_<suffix>``, e.g. ``910b_vir10``.
TEMPLATES: Mapping[str, VnpuTemplate] = {
    t.name: t
    for t in (
        VnpuTemplate("vir10_3c_32g", Fraction(1, 2), "vir10", frozenset({"910b"})),
        VnpuTemplate("vir05_1c_16g", Fraction(1, 4), "vir05", frozenset({"910b"})),
    )
}


@dataclass(frozen=True, slots=True)
class Gpu:
    """An NVIDIA GPU; ``model`` is its Slurm GRES type (``a100``, ``h100`` …)."""

    index: int
    model: str
    memory_mib: int
    device: str
    uuid: str | None = None
    mig: bool = False


@dataclass(frozen=True, slots=True)
class Npu:
    """A physical Ascend NPU chip; ``index`` is its physical id (``/dev/davinci<index>``)."""

    index: int
    model: str
    device: str
    memory_mib: int = 0


@dataclass(frozen=True, slots=True)
class Accel:
    """A Cambricon MLU, Hygon DCU or Kunlunxin XPU card; ``kind`` is its GRES name
    (:data:`gres.naming.ACCEL_KINDS`), ``index`` the number its runtime's visibility variable
    takes, ``model`` its Slurm GRES type."""

    kind: str
    index: int
    model: str
    device: str
    memory_mib: int = 0


@dataclass(frozen=True, slots=True)
class Vnpu:
    """An Ascend vNPU carved out of physical NPU ``npu_index`` with template ``template``."""

    npu_index: int
    template: str
    vnpu_id: int
    device: str

    @property
    def fraction(self) -> Fraction:
        """Share of the physical NPU this vNPU takes."""
        return TEMPLATES[self.template].fraction


@dataclass(frozen=True, slots=True)
class NodeInventory:
    """One Slurm node: its CPU shape, memory, features and devices."""

    name: str
    cpus: int
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    memory_mb: int
    features: tuple[str, ...] = ()
    gpus: tuple[Gpu, ...] = ()
    npus: tuple[Npu, ...] = ()
    vnpus: tuple[Vnpu, ...] = ()
    shards_per_gpu: int = DEFAULT_SHARDS_PER_GPU
    #: MLU, DCU and XPU cards, by kind then index
    accels: tuple[Accel, ...] = ()

    def accels_of(self, kind: str) -> tuple[Accel, ...]:
        """The node's cards of one accelerator kind, by index."""
        return tuple(a for a in self.accels if a.kind == kind)

    @property
    def accel_kinds(self) -> tuple[str, ...]:
        """Accelerator kinds the node has, in :data:`ACCEL_KINDS` order."""
        return tuple(k for k in ACCEL_KINDS if any(a.kind == k for a in self.accels))

    def accel_models(self, kind: str) -> tuple[str, ...]:
        """Distinct Slurm types of one kind's cards, sorted."""
        return tuple(sorted({a.model for a in self.accels_of(kind)}))

    @property
    def gpu_models(self) -> tuple[str, ...]:
        """Distinct GPU types, sorted."""
        return tuple(sorted({g.model for g in self.gpus}))

    @property
    def split_npu_indexes(self) -> frozenset[int]:
        """Physical NPUs that are carved into vNPUs and therefore not offered whole."""
        return frozenset(v.npu_index for v in self.vnpus)

    @property
    def whole_npus(self) -> tuple[Npu, ...]:
        """Physical NPUs offered whole, i.e. not split into vNPUs."""
        split = self.split_npu_indexes
        return tuple(n for n in self.npus if n.index not in split)

    @property
    def npu_models(self) -> tuple[str, ...]:
        """Distinct physical NPU models (split or not), sorted."""
        return tuple(sorted({n.model for n in self.npus}))

    @property
    def whole_npu_models(self) -> tuple[str, ...]:
        """Distinct Slurm types of whole NPUs, sorted."""
        return tuple(sorted({n.model for n in self.whole_npus}))

    def npu(self, index: int) -> Npu:
        """The physical NPU with physical id ``index``."""
        for n in self.npus:
            if n.index == index:
                return n
        raise KeyError(f"node {self.name} has no NPU {index}")

    def vnpu_type(self, vnpu: Vnpu) -> str:
        """Slurm GRES type of a vNPU: ``<parent model>_<template suffix>``."""
        return f"{self.npu(vnpu.npu_index).model}_{TEMPLATES[vnpu.template].suffix}"

    @property
    def vnpu_types(self) -> tuple[str, ...]:
        """Distinct vNPU Slurm types, sorted."""
        return tuple(sorted({self.vnpu_type(v) for v in self.vnpus}))

    @property
    def shard_count(self) -> int:
        """Shards Slurm offers on this node; 0 without GPUs (slurmd is fatal on shards alone)."""
        return len(self.gpus) * self.shards_per_gpu

    @property
    def has_gpus(self) -> bool:
        return bool(self.gpus)

    @property
    def has_npus(self) -> bool:
        """True when the node offers NPUs, whole or as vNPUs."""
        return bool(self.npus)

    @property
    def device_classes(self) -> tuple[str, ...]:
        """``gpu``, ``npu``, ``mlu``, ``dcu``, ``xpu`` for accelerator nodes, ``cpu`` for the
        rest."""
        classes = tuple(c for c, has in (("gpu", self.has_gpus), ("npu", self.has_npus)) if has)
        return (*classes, *self.accel_kinds) or ("cpu",)

    def with_device_dir(self, device_dir: str) -> NodeInventory:
        """A copy with every device file moved under ``device_dir`` (same file names)."""
        return replace(
            self,
            gpus=tuple(replace(g, device=reroot(g.device, device_dir)) for g in self.gpus),
            npus=tuple(replace(n, device=reroot(n.device, device_dir)) for n in self.npus),
            vnpus=tuple(replace(v, device=reroot(v.device, device_dir)) for v in self.vnpus),
            accels=tuple(replace(a, device=reroot(a.device, device_dir)) for a in self.accels),
        )

    def to_dict(self) -> dict[str, Any]:
        """The node in the inventory YAML format (see docs/gres.md), as compact as possible."""
        return dump.node_to_dict(self)


@dataclass(frozen=True, slots=True)
class Inventory:
    """All nodes, in the order the inventory lists them, and the switches they hang off."""

    nodes: tuple[NodeInventory, ...] = field(default_factory=tuple)
    topology: Topology = field(default_factory=Topology)

    def node(self, name: str) -> NodeInventory:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(f"no node named {name!r} in the inventory")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n.name for n in self.nodes)

    def with_device_dir(self, device_dir: str | os.PathLike[str]) -> Inventory:
        """A copy with all device paths re-rooted, e.g. onto mknod'ed fake devices of a lab."""
        root = posixpath.normpath(os.fspath(device_dir))
        if not posixpath.isabs(root) or not DEVICE_PATH_RE.match(root):
            # gres.conf takes the path unquoted: no spaces or shell/hostlist characters.
            raise ValueError(
                f"device_dir must be an absolute path of letters, digits, '_', '.', '-', "
                f"got {root!r}"
            )
        return replace(self, nodes=tuple(n.with_device_dir(root) for n in self.nodes))

    def to_dict(self) -> dict[str, Any]:
        """The inventory in its YAML format; ``load_inventory`` reads it back unchanged."""
        return dump.inventory_to_dict(self)

    def to_yaml(self) -> str:
        """YAML with one block per node and one line per device entry."""
        return dump.inventory_to_yaml(self)
