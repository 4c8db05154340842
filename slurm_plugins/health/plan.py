"""What one health check wants done: drain failing nodes, return healthy ones, tell people.

Pure: :func:`plan` takes Slurm's view of the nodes, the agents' reports, the checker's own
bookkeeping (:class:`HealthState`) and ``now``, and returns a :class:`HealthPlan`. Rules:

* A failing node that is not drained is drained with the verdict's reason (prefixed
  ``health:``, so the checker recognises its own drains). A node someone else drained is
  left alone — it is only reported.
* A node the checker drained returns (``RESUME``) once it has been healthy for
  ``recover_after`` consecutive checks; a check without a fresh report breaks the streak.
* At most ``max_drained`` of the checked nodes (a fraction; at least one node) are drained
  by the checker at once: a fault that strikes every node at the same moment (a shared
  time source gone wrong, a broken agent rollout) is told, not turned into an empty
  cluster.
* Each node's trouble is told once: an alert when it starts failing (or its set of
  problems changes), one when it returns. Warnings that do not drain are told once too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from plumbing.notify import Notification
from slurm_plugins.health.config import HealthConfig
from slurm_plugins.health.verdict import NodeView, Verdict, assess
from slurm_plugins.node import Seen


@dataclass(frozen=True, slots=True)
class NodeRecord:
    #: Consecutive healthy checks of a node the checker drained (reset by anything else).
    streak: int = 0
    #: The problems last told about ("" when nothing is outstanding).
    told: str = ""
    #: When the checker drained the node (None: not drained by it).
    drained_at: float | None = None


@dataclass(frozen=True, slots=True)
class HealthState:
    nodes: Mapping[str, NodeRecord] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NodeChange:
    node: str
    reason: str


@dataclass(frozen=True, slots=True)
class Alert:
    node: str
    note: Notification


@dataclass(frozen=True, slots=True)
class HealthPlan:
    now: float
    verdicts: tuple[Verdict, ...] = ()
    drains: tuple[NodeChange, ...] = ()
    resumes: tuple[NodeChange, ...] = ()
    alerts: tuple[Alert, ...] = ()
    state: HealthState = field(default_factory=HealthState)

    @property
    def notifications(self) -> tuple[Notification, ...]:
        return tuple(a.note for a in self.alerts)


def plan(
    nodes: tuple[NodeView, ...] | list[NodeView],
    reports: Mapping[str, Seen],
    state: HealthState,
    *,
    now: float,
    config: HealthConfig,
    admins: tuple[str, ...] = ("root",),
    controller_offset_s: float | None = None,
) -> HealthPlan:
    wanted = set(config.nodes)
    checked = sorted((n for n in nodes if not wanted or n.name in wanted), key=lambda n: n.name)
    limit = max(1, int(config.max_drained * len(checked)))
    ours = sum(1 for n in checked if n.drained_by_health)
    verdicts: list[Verdict] = []
    out = _Out(now, config, admins, limit, limit - ours)
    records: dict[str, NodeRecord] = {}
    for node in checked:
        v = assess(
            node,
            reports.get(node.name),
            now=now,
            config=config,
            controller_offset_s=controller_offset_s,
        )
        verdicts.append(v)
        rec = state.nodes.get(node.name, NodeRecord())
        records[node.name] = _decide(node, v, rec, out)
    return HealthPlan(
        now=now,
        verdicts=tuple(verdicts),
        drains=tuple(out.drains),
        resumes=tuple(out.resumes),
        alerts=tuple(out.alerts),
        state=HealthState({k: r for k, r in records.items() if r != NodeRecord()}),
    )


@dataclass
class _Out:
    """One check's inputs that every node shares, and what it decided so far."""

    now: float
    config: HealthConfig
    admins: tuple[str, ...]
    #: At most this many nodes drained by the checker at once, and how many more may be.
    limit: int
    room: int
    drains: list[NodeChange] = field(default_factory=list)
    resumes: list[NodeChange] = field(default_factory=list)
    alerts: list[Alert] = field(default_factory=list)

    def tell(self, kind: str, node: str, subject: str, v: Verdict) -> None:
        self.alerts.append(Alert(node, _note(kind, node, self.admins, subject, v)))


def _decide(node: NodeView, v: Verdict, rec: NodeRecord, out: _Out) -> NodeRecord:
    ours = node.drained_by_health
    drained_at = rec.drained_at if ours else None
    if v.failing:
        reason = v.reason()
        told = _signature(v)
        if not node.drained and out.config.drain and out.room > 0:
            out.drains.append(NodeChange(node.name, reason))
            out.room -= 1
            drained_at = out.now
            if told != rec.told:
                out.tell("node_drained", node.name, f"drained: {reason}", v)
        else:
            if ours:
                why = "drained"
            elif node.drained:
                why = "drained by someone else"
            elif out.config.drain:
                why = f"not drained: {out.limit} node(s) drained by health already, the limit"
                told += "|held"  # told again once it is drained
            else:
                why = "not drained"
            if told != rec.told:
                out.tell("node_failing", node.name, f"failing ({why}): {reason}", v)
        return NodeRecord(0, told, drained_at)
    streak = rec.streak + 1 if v.healthy and ours else 0
    told = rec.told
    if ours and streak >= out.config.recover_after:
        text = f"healthy for {streak} consecutive checks"
        out.resumes.append(NodeChange(node.name, text))
        out.tell("node_resumed", node.name, f"returned to service: {text}", v)
        return NodeRecord()
    warn = _signature(v)
    if warn and warn != told and not ours:
        subject = f"warning: {v.reason(draining_only=False)}"
        out.tell("node_warning", node.name, subject, v)
        told = warn
    elif not warn and not ours and told:
        told = ""  # the problems went away on their own: tell the next ones again
    return NodeRecord(streak, told, drained_at)


def _signature(v: Verdict) -> str:
    """What is wrong, by kind: an alert goes out when this changes, not every check."""
    return ",".join(sorted(p.value for p in v.problems))


def _note(kind: str, node: str, admins: tuple[str, ...], subject: str, v: Verdict) -> Notification:
    lines = [f"- {f.detail}{'' if f.drains else ' (not drained for this)'}" for f in v.findings]
    body = "\n".join([f"node {node}: {subject}", *lines])
    return Notification(kind, 0, admins, f"aipool: node {node} {subject}", body)
