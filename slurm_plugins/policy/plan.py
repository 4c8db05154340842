"""What one cycle wants changed, each change with the reason the portal shows.

A :class:`Plan` is the engine's output: the *complete* wish for this cycle, already reduced
to what differs from the snapshot. :mod:`slurm_plugins.policy.apply` turns it into as few
Slurm calls as it can.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from plumbing import codec
from plumbing.notify import Notification
from slurm_plugins.policy.snapshot import DaemonState
from translations import Message


@dataclass(frozen=True, slots=True)
class JobChange:
    """Fields of one pending job to set; ``None`` leaves a field alone."""

    job_id: int
    site_factor: int | None = None
    req_nodes: str | None = None
    exc_nodes: str | None = None
    reason: str = ""
    qos: str | None = None
    #: End the wait the admission hook gave it for the placement daemon (``StartTime=now``).
    start_now: bool = False


class Action(StrEnum):
    """What happens to a running job, weakest first."""

    WARN = "warn"
    SIGNAL = "signal"
    REQUEUE = "requeue"
    REQUEUE_HOLD = "requeue_hold"
    CANCEL = "cancel"


@dataclass(frozen=True, slots=True)
class JobAction:
    job_id: int
    action: Action
    reason: str
    signal: str | None = None
    policy: str = ""
    #: Node a moved job should run on next (defragmentation), pinned when it is released.
    target: str | None = None
    #: the reason in words for the job's owner, in any language (mailed to them)
    note: Message | None = None


@dataclass(frozen=True, slots=True)
class Hold:
    job_id: int
    reason: str


@dataclass(frozen=True, slots=True)
class NodeWeight:
    node: str
    weight: int
    reason: str


@dataclass(frozen=True, slots=True)
class Plan:
    now: float
    job_changes: tuple[JobChange, ...] = ()
    holds: tuple[Hold, ...] = ()
    releases: tuple[Hold, ...] = ()
    actions: tuple[JobAction, ...] = ()
    node_weights: tuple[NodeWeight, ...] = ()
    notifications: tuple[Notification, ...] = ()
    #: Every decision about a job this cycle, for the portal and ``aipool job ID``.
    reasons: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    #: Pending jobs in the order the policies want them started.
    order: tuple[int, ...] = ()
    #: The daemon's bookkeeping once this plan has been applied in full.
    state: DaemonState = field(default_factory=DaemonState)
    #: Earliest time a timed step (requeue after a checkpoint signal…) becomes due.
    wake_at: float | None = None

    @property
    def empty(self) -> bool:
        """Nothing for Slurm to do (notifications aside)."""
        return not (
            self.job_changes or self.holds or self.releases or self.actions or self.node_weights
        )

    def actions_of(self, action: Action) -> tuple[JobAction, ...]:
        return tuple(a for a in self.actions if a.action is action)

    def summary(self) -> dict[str, int]:
        return {
            "job_changes": len(self.job_changes),
            "holds": len(self.holds),
            "releases": len(self.releases),
            **{a.value: len(self.actions_of(a)) for a in Action},
            "node_weights": len(self.node_weights),
            "notifications": len(self.notifications),
        }

    def to_json(self) -> str:
        return json.dumps(codec.dump(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Plan:
        return codec.load(cls, json.loads(text))
