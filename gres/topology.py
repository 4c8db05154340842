"""Network topology of the pool: which leaf switch each node hangs off, and the device islands
(NVLink, HCCS) inside a node.

The inventory YAML is the source of truth (a site knows its cabling; a probe cannot see a
switch). Two optional top-level sections, checked against the inventory's nodes::

    switches:
      - {name: leaf1, nodes: ["gpu[1-2]"]}      # a leaf switch: the nodes cabled to it
      - {name: leaf2, nodes: [npu1, npu2, cpu1]}
      - {name: spine, switches: [leaf1, leaf2]} # an upper switch: the switches under it
    islands:
      - {node: gpu1, kind: nvlink, devices: [0, 1, 2, 3]}

Every node must hang off exactly one leaf switch once any switch is named: Slurm's
``topology/tree`` only places jobs on nodes it finds under a switch. When the switches named
have more than one top, a root switch (:data:`ROOT`) is added over them, so that a job may still
span switches when it has to. ``topology.conf`` is rendered from this, and only this.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from gres.hostlist import compress_paths, expand_range
from gres.naming import GENERATED_HEADER, NODE_NAME_RE, RESERVED_NODE_NAMES

#: The switch added over several top-level switches.
ROOT = "root"


class IslandKind(StrEnum):
    """A group of cards with a fast link between them: NVLink (GPUs) or HCCS (Ascend NPUs)."""

    NVLINK = "nvlink"
    HCCS = "hccs"

    @property
    def device_class(self) -> str:
        return "gpu" if self is IslandKind.NVLINK else "npu"


@dataclass(frozen=True, slots=True)
class Switch:
    """A switch: a leaf has ``nodes``, an upper switch has ``switches`` under it."""

    name: str
    nodes: tuple[str, ...] = ()
    switches: tuple[str, ...] = ()

    @property
    def leaf(self) -> bool:
        return bool(self.nodes)


@dataclass(frozen=True, slots=True)
class Island:
    """Cards of one node (GPU or NPU indexes) joined by NVLink or HCCS."""

    node: str
    kind: IslandKind
    devices: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Topology:
    """The switches as the inventory names them, and the islands; empty when it names none."""

    switches: tuple[Switch, ...] = ()
    islands: tuple[Island, ...] = ()
    _leaf: Mapping[str, str] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        leaf = {n: s.name for s in self.switches for n in s.nodes}
        object.__setattr__(self, "_leaf", leaf)

    @property
    def empty(self) -> bool:
        """True when no switch is named: Slurm runs without a topology plugin."""
        return not self.switches

    def leaf_of(self, node: str) -> str | None:
        """The leaf switch ``node`` hangs off, or None when the inventory names none."""
        return self._leaf.get(node)

    @property
    def leaf_of_node(self) -> Mapping[str, str]:
        """Node name → leaf switch name, for every node under a switch."""
        return dict(self._leaf)

    @property
    def tops(self) -> tuple[str, ...]:
        """Switches under no other switch, in inventory order."""
        children = {c for s in self.switches for c in s.switches}
        return tuple(s.name for s in self.switches if s.name not in children)

    def tree(self) -> tuple[Switch, ...]:
        """The switches Slurm is given: those named, plus :data:`ROOT` over several tops."""
        tops = self.tops
        if len(tops) <= 1:
            return self.switches
        return (*self.switches, Switch(ROOT, switches=tops))

    def islands_of(self, node: str) -> tuple[Island, ...]:
        return tuple(i for i in self.islands if i.node == node)


def render_topology_conf(topology: Topology) -> str:
    """``topology.conf`` for ``topology/tree``: leaves first, then the switches above them."""
    lines = [GENERATED_HEADER.rstrip("\n")]
    if topology.empty:
        lines.append("# The inventory names no switches: slurm.conf keeps topology/none.")
    ordered = sorted(topology.tree(), key=lambda s: not s.leaf)  # stable: inventory order kept
    for switch in ordered:
        if switch.leaf:
            lines.append(f"SwitchName={switch.name} Nodes={','.join(compress_paths(switch.nodes))}")
        else:
            children = ",".join(compress_paths(switch.switches))
            lines.append(f"SwitchName={switch.name} Switches={children}")
    return "\n".join(lines) + "\n"


def topology_to_dict(topology: Topology) -> dict[str, Any]:
    """The ``switches`` / ``islands`` sections in the inventory format (empty when none)."""
    out: dict[str, Any] = {}
    if topology.switches:
        out["switches"] = [
            {"name": s.name, "nodes": list(s.nodes)}
            if s.leaf
            else {"name": s.name, "switches": list(s.switches)}
            for s in topology.switches
        ]
    if topology.islands:
        out["islands"] = [
            {"node": i.node, "kind": i.kind.value, "devices": list(i.devices)}
            for i in topology.islands
        ]
    return out


# --- building from schema-checked data -------------------------------------------------------


def build_topology(
    data: Mapping[str, Any], devices: Mapping[str, Mapping[str, frozenset[int]]]
) -> tuple[Topology, list[str]]:
    """The topology of schema-checked ``data`` and every problem as ``path: message``.

    ``devices`` maps each inventory node to its card indexes by class (``{"gpu": {0, 1}}``);
    its keys are the inventory's node names.
    """
    errors: list[str] = []
    switches = _switches(data.get("switches") or [], list(devices), errors)
    islands = _islands(data.get("islands") or [], devices, errors)
    return Topology(switches=tuple(switches), islands=tuple(islands)), errors


def _switches(
    entries: list[Mapping[str, Any]], nodes: list[str], errors: list[str]
) -> list[Switch]:
    out: list[Switch] = []
    named: dict[str, int] = {}
    node_at: dict[str, str] = {}
    for i, entry in enumerate(entries):
        path = f"switches[{i}]"
        name = entry["name"]
        if not NODE_NAME_RE.match(name) or name.lower() in RESERVED_NODE_NAMES:
            errors.append(f"{path}.name: {name!r} is not a valid switch name")
        elif name in named:
            errors.append(f"{path}.name: duplicate switch {name!r} (see switches[{named[name]}])")
        named.setdefault(name, i)
        members = _expand(entry.get("nodes") or [], f"{path}.nodes", errors)
        children = tuple(entry.get("switches") or [])
        if bool(members) == bool(children):
            errors.append(f"{path}: give either nodes (a leaf switch) or switches, not both")
        for node in members:
            if node not in nodes:
                errors.append(f"{path}.nodes: {node!r} is not a node of the inventory")
            elif node in node_at:
                errors.append(f"{path}.nodes: {node!r} is already under switch {node_at[node]!r}")
            else:
                node_at[node] = name
        out.append(Switch(name, tuple(members), children))
    if out:
        _check_tree(out, named, errors)
        if missing := [n for n in nodes if n not in node_at]:
            errors.append(
                f"switches: nodes under no switch: {', '.join(missing)}; Slurm's topology/tree "
                "would never place a job on them"
            )
    return out


def _check_tree(switches: list[Switch], named: Mapping[str, int], errors: list[str]) -> None:
    parent: dict[str, str] = {}
    for i, s in enumerate(switches):
        for child in s.switches:
            if child not in named:
                errors.append(f"switches[{i}].switches: no switch named {child!r}")
            elif child in parent:
                errors.append(
                    f"switches[{i}].switches: {child!r} is already under switch {parent[child]!r}"
                )
            else:
                parent[child] = s.name
    for s in switches:
        seen, at = {s.name}, parent.get(s.name)
        while at is not None:
            if at in seen:
                errors.append(f"switches: {s.name!r} is inside a loop of switches")
                return
            seen.add(at)
            at = parent.get(at)
    tops = [s.name for s in switches if s.name not in parent]
    if len(tops) > 1 and ROOT in tops:
        errors.append(
            f"switches: {ROOT!r} is the switch added over several top switches "
            f"({', '.join(tops)}); name them under one switch of your own"
        )


def _expand(items: Iterable[str], path: str, errors: list[str]) -> list[str]:
    out: list[str] = []
    for item in items:
        try:
            out += expand_range(item)
        except ValueError as exc:
            errors.append(f"{path}: {exc}")
    return out


def _islands(
    entries: list[Mapping[str, Any]],
    devices: Mapping[str, Mapping[str, frozenset[int]]],
    errors: list[str],
) -> list[Island]:
    out: list[Island] = []
    taken: dict[tuple[str, str, int], int] = {}
    for i, entry in enumerate(entries):
        path = f"islands[{i}]"
        node, kind = entry["node"], IslandKind(entry["kind"])
        if node not in devices:
            errors.append(f"{path}.node: {node!r} is not a node of the inventory")
            continue
        have = devices[node].get(kind.device_class, frozenset())
        for index in entry["devices"]:
            key = (node, kind.device_class, index)
            if index not in have:
                errors.append(f"{path}.devices: {node} has no {kind.device_class} {index}")
            elif key in taken:
                errors.append(
                    f"{path}.devices: {kind.device_class} {index} is in islands[{taken[key]}] too"
                )
            taken.setdefault(key, i)
        out.append(Island(node, kind, tuple(sorted(set(entry["devices"])))))
    return out
