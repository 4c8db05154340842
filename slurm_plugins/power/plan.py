"""Pure decisions of elastic nodes: which requested nodes may come up under each partition's
ceiling, which nodes held back by a ceiling may return, Slurm's ``SuspendExcNodes`` for the
floors, and the energy saved from the programs' event log.

Nothing here reads Slurm or a file: the programs (:mod:`slurm_plugins.power.program`) take a
snapshot, call these, and act on what they return.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from slurm_plugins.power.config import PowerConfig

#: Every reason the programs give Slurm starts so (``sinfo -R`` shows it; the portal too).
REASON_PREFIX = "power:"
CEILING_PREFIX = f"{REASON_PREFIX} ceiling"


class Power(StrEnum):
    """Where a node stands in Slurm's power saving (its flags, or sinfo's suffix)."""

    ON = "on"
    OFF = "off"  # POWERED_DOWN, sinfo ~
    POWERING_UP = "powering_up"  # sinfo #
    POWERING_DOWN = "powering_down"  # sinfo %
    PENDING_DOWN = "pending_down"  # POWER_DOWN requested, sinfo !

    @classmethod
    def of_flags(cls, flags: Iterable[str]) -> Power:
        f = {x.upper() for x in flags}
        if "POWERING_DOWN" in f:
            return cls.POWERING_DOWN
        if "POWERED_DOWN" in f:
            return cls.OFF
        if "POWERING_UP" in f:
            return cls.POWERING_UP
        if "POWER_DOWN" in f:
            return cls.PENDING_DOWN
        return cls.ON

    @classmethod
    def of_sinfo(cls, compact: str) -> Power:
        """From sinfo's compact state (``idle~``, ``alloc#``, ``idle%``, ``idle!``)."""
        suffix = {"~": cls.OFF, "#": cls.POWERING_UP, "%": cls.POWERING_DOWN, "!": cls.PENDING_DOWN}
        return next((p for s, p in suffix.items() if s in compact), cls.ON)


@dataclass(frozen=True, slots=True)
class NodeView:
    """What the plans need of one node."""

    name: str
    partitions: tuple[str, ...]
    power: Power
    down: bool = False
    reason: str = ""

    @property
    def counts_up(self) -> bool:
        """On, or on its way: it holds a place under its partitions' ceilings."""
        return self.power in (Power.ON, Power.POWERING_UP) and not self.down


@dataclass(frozen=True, slots=True)
class ResumePlan:
    start: tuple[str, ...]
    #: (node, reason): left off, set DOWN with the reason so that its job goes elsewhere
    refuse: tuple[tuple[str, str], ...] = ()


def plan_resume(
    requested: Sequence[str], nodes: Mapping[str, NodeView], cfg: PowerConfig
) -> ResumePlan:
    """Start the requested nodes in order while each of their partitions stays at or under
    its ceiling; a node that is not a power-saved one is refused too (Slurm asked for a node
    this configuration does not switch)."""
    saved = set(cfg.nodes)
    wanted = set(requested)
    # Slurm has already flagged the requested nodes POWERING_UP: count only the others
    up: dict[str, int] = {}
    for view in nodes.values():
        if view.name in saved and view.name not in wanted and view.counts_up:
            for p in view.partitions:
                up[p] = up.get(p, 0) + 1
    start: list[str] = []
    refuse: list[tuple[str, str]] = []
    for name in dict.fromkeys(requested):
        if name not in saved:
            refuse.append((name, f"{REASON_PREFIX} not a power-saved node of this configuration"))
            continue
        parts = nodes[name].partitions if name in nodes else ()
        full = [p for p in parts if _at_ceiling(cfg, p, up.get(p, 0))]
        if full:
            limit = cfg.partitions[full[0]].ceiling
            refuse.append((name, f"{CEILING_PREFIX}: partition {full[0]} has {limit} nodes up"))
            continue
        start.append(name)
        for p in parts:
            up[p] = up.get(p, 0) + 1
    return ResumePlan(tuple(start), tuple(refuse))


def _at_ceiling(cfg: PowerConfig, partition: str, up: int) -> bool:
    lim = cfg.partitions.get(partition)
    return lim is not None and lim.ceiling is not None and up >= lim.ceiling


def plan_release(nodes: Mapping[str, NodeView], cfg: PowerConfig) -> tuple[str, ...]:
    """Nodes a ceiling held back (DOWN with :data:`CEILING_PREFIX`) whose partitions have room
    again: they return to service, powered down, ready for the next resume."""
    saved = set(cfg.nodes)
    up: dict[str, int] = {}
    for view in nodes.values():
        if view.name in saved and view.counts_up:
            for p in view.partitions:
                up[p] = up.get(p, 0) + 1
    out: list[str] = []
    for view in sorted(nodes.values(), key=lambda v: v.name):
        if not (view.down and view.reason.startswith(CEILING_PREFIX)):
            continue
        if any(_at_ceiling(cfg, p, up.get(p, 0)) for p in view.partitions):
            continue
        out.append(view.name)
        # a released node may be resumed at once: it takes its place under the ceiling
        for p in view.partitions:
            up[p] = up.get(p, 0) + 1
    return tuple(out)


def suspend_exc_nodes(
    cfg: PowerConfig, partitions: Mapping[str, Sequence[str]], all_nodes: Sequence[str]
) -> str:
    """``SuspendExcNodes``: for each partition with a floor, its power-saved nodes and how many
    of them Slurm keeps up (``a,b:1``), then every node that is not power-saved (Slurm wants
    the counted sets first). Empty when nothing is excluded."""
    saved = set(cfg.nodes)
    sets: list[str] = []
    for name in sorted(partitions):
        lim = cfg.partitions.get(name)
        members = [n for n in partitions[name] if n in saved]
        if lim is not None and lim.floor > 0 and members:
            sets.append(f"{','.join(members)}:{min(lim.floor, len(members))}")
    always = [n for n in all_nodes if n not in saved]
    return ",".join([*sets, *always])


# ------------------------------------------------------------------ energy
class EventKind(StrEnum):
    SUSPEND = "suspend"
    RESUME = "resume"
    RESUME_FAILED = "resume_failed"
    REFUSED = "refused"
    SUSPEND_FAILED = "suspend_failed"


@dataclass(frozen=True, slots=True)
class Event:
    at: float
    node: str
    kind: EventKind
    detail: str = ""


@dataclass(frozen=True, slots=True)
class NodeEnergy:
    node: str
    off_s: float
    watts: float

    @property
    def hours(self) -> float:
        return self.off_s / 3600

    @property
    def kwh(self) -> float:
        return self.off_s / 3600 * self.watts / 1000


def off_spans(events: Iterable[Event]) -> dict[str, list[tuple[float, float | None]]]:
    """Per node, the spans it was off: from a suspend to the next resume; the last one open
    (``None``) while the node is still off.

    A node is on until its first suspend; a failed resume leaves it off (it never came up),
    a failed suspend leaves it on."""
    spans: dict[str, list[tuple[float, float | None]]] = {}
    off_since: dict[str, float] = {}
    for ev in sorted(events, key=lambda e: e.at):
        if ev.kind is EventKind.SUSPEND:
            off_since.setdefault(ev.node, ev.at)
        elif ev.kind is EventKind.RESUME and ev.node in off_since:
            spans.setdefault(ev.node, []).append((off_since.pop(ev.node), ev.at))
    for node, start in off_since.items():
        spans.setdefault(node, []).append((start, None))
    return spans


def off_intervals(events: Iterable[Event], until: float) -> dict[str, list[tuple[float, float]]]:
    """:func:`off_spans` with the open spans closed at ``until`` (those starting later left
    out)."""
    out: dict[str, list[tuple[float, float]]] = {}
    for node, spans in off_spans(events).items():
        closed = [(a, until if b is None else b) for a, b in spans if b is not None or a < until]
        if closed:
            out[node] = closed
    return out


def energy_saved(
    events: Iterable[Event], cfg: PowerConfig, *, since: float, until: float
) -> list[NodeEnergy]:
    """Hours each node was powered down inside ``[since, until)`` times its idle draw: the
    energy an always-on pool would have spent on it idle. Sorted by node."""
    out = []
    for node, spans in sorted(off_intervals(events, until).items()):
        off = sum(max(0.0, min(end, until) - max(start, since)) for start, end in spans)
        out.append(NodeEnergy(node, off, cfg.watts(node)))
    return out
