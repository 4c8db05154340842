"""Switch-aware placement: where a multi-node gang and where single-node work should go.

Pure functions over frozen :class:`SwitchNode` views, shared by the simulator (which measures
them against Slurm's default-like first fit) and any caller that pins nodes. Two rules:

* a **gang** (a job on several nodes, each with the same cards) goes under one leaf switch when
  one has room, the switch it fills most tightly, so that emptier switches stay whole for the
  next big gang; when none has room it spans as few switches as it can;
* **single-node work** (fractional or a few cards) goes to nodes on the switch with the
  smallest share of idle nodes: it fills switches that are already broken into rather than
  the whole switches big gangs need, then packs nodes as best-fit does.

Nodes under no switch are each their own "switch" of one: they never count as one switch
for a gang of two or more. Everything is deterministic: ties go to the lowest switch and node
name.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class SwitchNode:
    """A node as placement sees it: its leaf switch and its whole cards, free and in all."""

    name: str
    switch: str | None
    free: int
    cards: int

    @property
    def idle(self) -> bool:
        return self.free == self.cards

    @property
    def group(self) -> str:
        """The switch it counts under; a node under none is a group of its own."""
        return self.switch if self.switch is not None else f"\0{self.name}"


@dataclass(frozen=True, slots=True)
class Gang:
    """``nodes`` nodes with ``cards`` free cards each (0: CPU work that takes whole nodes)."""

    nodes: int
    cards: int


GangPlacer = Callable[[Gang, Sequence[SwitchNode]], tuple[str, ...] | None]


def switches_used(chosen: Iterable[str], nodes: Sequence[SwitchNode]) -> int:
    """How many switches (groups) a set of chosen node names spans."""
    group = {n.name: n.group for n in nodes}
    return len({group[name] for name in chosen})


def gang_first_fit(gang: Gang, nodes: Sequence[SwitchNode]) -> tuple[str, ...] | None:
    """Slurm's default without a topology plugin, as seen from outside: the first nodes by
    name that fit, wherever they are cabled."""
    fitting = sorted((n for n in nodes if n.free >= gang.cards), key=lambda n: n.name)
    if len(fitting) < gang.nodes:
        return None
    return tuple(n.name for n in fitting[: gang.nodes])


def gang_same_switch(gang: Gang, nodes: Sequence[SwitchNode]) -> tuple[str, ...] | None:
    """AIPool's gang placement: one switch when one has room (the tightest), else the fewest.

    Inside a switch the nodes with the fewest free cards go first (best fit), so a gang that
    does not need whole nodes leaves the idle ones idle.
    """
    groups = _fitting_by_group(gang, nodes)
    if sum(len(g) for g in groups.values()) < gang.nodes:
        return None
    roomy = [name for name, members in groups.items() if len(members) >= gang.nodes]
    if roomy:
        # tightest: the least room left over on that switch, then the lowest name
        best = min(roomy, key=lambda s: (len(groups[s]) - gang.nodes, s))
        return tuple(n.name for n in groups[best][: gang.nodes])
    chosen: list[SwitchNode] = []
    for name in sorted(groups, key=lambda s: (-len(groups[s]), s)):
        chosen += groups[name][: gang.nodes - len(chosen)]
        if len(chosen) == gang.nodes:
            break
    return tuple(n.name for n in chosen)


def _fitting_by_group(gang: Gang, nodes: Sequence[SwitchNode]) -> dict[str, list[SwitchNode]]:
    groups: dict[str, list[SwitchNode]] = defaultdict(list)
    for n in nodes:
        if n.free >= gang.cards:
            groups[n.group].append(n)
    for members in groups.values():
        members.sort(key=lambda n: (n.free, n.name))
    return dict(groups)


def idle_share(nodes: Sequence[SwitchNode]) -> dict[str, float]:
    """Per switch (group), the share of its nodes that are wholly idle."""
    idle: dict[str, int] = defaultdict(int)
    total: dict[str, int] = defaultdict(int)
    for n in nodes:
        total[n.group] += 1
        idle[n.group] += n.idle
    return {g: idle[g] / total[g] for g in total}


def single_first_fit(cards: int, nodes: Sequence[SwitchNode]) -> str | None:
    """Slurm-like for one node: the first node by name with room."""
    fitting = [n for n in nodes if n.free >= cards]
    return min(fitting, key=lambda n: n.name).name if fitting else None


def single_off_big_switches(cards: int, nodes: Sequence[SwitchNode]) -> str | None:
    """AIPool's single-node placement: the switch with the least idle share, then best fit."""
    fitting = [n for n in nodes if n.free >= cards]
    if not fitting:
        return None
    share = idle_share(nodes)
    return min(fitting, key=lambda n: (share[n.group], n.free - cards, n.name)).name


def switch_bias(node: SwitchNode, nodes: Sequence[SwitchNode]) -> float:
    """A score in [0, 1] for single-node work on ``node`` (higher is better): 1 on a switch with
    no idle node left, 0 on a wholly idle switch. Added with a small weight to a packing score,
    it keeps fractional work off the switches gangs need without overriding the packing."""
    return 1.0 - idle_share(nodes)[node.group]


#: Gang placers by name: ``first-fit`` (Slurm's default-like) and ``same-switch`` (AIPool's).
GANG_PLACERS: Mapping[str, GangPlacer] = MappingProxyType(
    {"first-fit": gang_first_fit, "same-switch": gang_same_switch}
)
#: Single-node placers with the same names, so one strategy name picks both.
SINGLE_PLACERS: Mapping[str, Callable[[int, Sequence[SwitchNode]], str | None]] = MappingProxyType(
    {"first-fit": single_first_fit, "same-switch": single_off_big_switches}
)
