"""Slurm's ResumeProgram, SuspendProgram and ResumeFailProgram: snapshot, pure plan, act.

slurmctld runs them as its SlurmUser with a hostlist. A node that cannot come up is set DOWN
with the reason at once (Slurm requeues its job, which then runs elsewhere) rather than
after ``ResumeTimeout``; a node a partition's ceiling holds back is set DOWN with a
``power: ceiling`` reason and returns to service when the partition has room again. Every
switch is appended to the event log, from which the energy saved is reckoned.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gres.hostlist import expand_hostlist
from slurm_plugins.client.models import NodeState
from slurm_plugins.power.config import PowerConfig
from slurm_plugins.power.drivers import Driver, Outcome, switch_all
from slurm_plugins.power.plan import (
    REASON_PREFIX,
    Event,
    EventKind,
    NodeView,
    Power,
    plan_release,
    plan_resume,
)

if TYPE_CHECKING:
    from slurm_plugins.client import SlurmClient

log = logging.getLogger("aipool.power")


@dataclass(frozen=True, slots=True)
class RunReport:
    """What one program run did, node by node."""

    switched: tuple[Outcome, ...] = ()
    refused: tuple[tuple[str, str], ...] = ()
    released: tuple[str, ...] = ()

    @property
    def failed(self) -> tuple[Outcome, ...]:
        return tuple(o for o in self.switched if not o.ok)


def snapshot(client: SlurmClient) -> dict[str, NodeView]:
    return {
        n.name: NodeView(
            name=n.name,
            partitions=n.partitions,
            power=Power.of_flags(n.flags),
            down=n.state is NodeState.DOWN or "DRAIN" in n.flags,
            reason=n.reason,
        )
        for n in client.nodes()
    }


class Programs:
    """The three programs over one configuration, client, driver and clock."""

    def __init__(
        self,
        cfg: PowerConfig,
        client: SlurmClient,
        driver: Driver,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.cfg = cfg
        self.client = client
        self.driver = driver
        self.clock = clock

    def resume(self, hostlist: str) -> RunReport:
        """Bring the nodes up (those the ceilings allow); the ones that fail go DOWN."""
        plan = plan_resume(expand_hostlist(hostlist), snapshot(self.client), self.cfg)
        for node, reason in plan.refuse:
            self._down(node, reason)
        outcomes = switch_all(self.driver, plan.start, on=True, parallel=self.cfg.parallel)
        for o in outcomes:
            if not o.ok:
                self._down(o.node, f"{REASON_PREFIX} resume failed: {o.detail}")
        self._record(
            [Event(self.clock(), n, EventKind.REFUSED, r) for n, r in plan.refuse]
            + [_event(self.clock(), o, EventKind.RESUME, EventKind.RESUME_FAILED) for o in outcomes]
        )
        return RunReport(tuple(outcomes), plan.refuse)

    def suspend(self, hostlist: str) -> RunReport:
        """Switch the nodes off; then return the nodes a ceiling held back where there is room."""
        nodes = expand_hostlist(hostlist)
        outcomes = switch_all(self.driver, nodes, on=False, parallel=self.cfg.parallel)
        for o in outcomes:
            if not o.ok:
                log.warning("could not switch %s off: %s", o.node, o.detail)
        self._record(
            [_event(self.clock(), o, EventKind.SUSPEND, EventKind.SUSPEND_FAILED) for o in outcomes]
        )
        released = plan_release(snapshot(self.client), self.cfg)
        for node in released:
            self.client.update_node(node, state="RESUME")
        return RunReport(tuple(outcomes), released=released)

    def resume_failed(self, hostlist: str) -> RunReport:
        """Slurm gave up on the nodes (``ResumeTimeout``; it has set them DOWN): switch them
        off again, so that a half-started node draws nothing, and record it."""
        nodes = expand_hostlist(hostlist)
        outcomes = switch_all(self.driver, nodes, on=False, parallel=self.cfg.parallel)
        now = self.clock()
        self._record(
            [Event(now, n, EventKind.RESUME_FAILED, "resume timeout") for n in nodes]
            + [Event(now, o.node, EventKind.SUSPEND) for o in outcomes if o.ok]
        )
        return RunReport(tuple(outcomes))

    def _down(self, node: str, reason: str) -> None:
        log.warning("%s: %s", node, reason)
        self.client.update_node(node, state="DOWN", reason=reason[:200])

    def _record(self, events: Iterable[Event]) -> None:
        if self.cfg.events is not None:
            append_events(self.cfg.events, events)


def _event(at: float, o: Outcome, ok: EventKind, failed: EventKind) -> Event:
    return Event(at, o.node, ok if o.ok else failed, o.detail)


# ------------------------------------------------------------------ event log
def append_events(path: Path, events: Iterable[Event]) -> None:
    """One JSON line per event, appended (one write: lines of concurrent runs never mix)."""
    lines = "".join(
        json.dumps(
            {"at": round(e.at, 3), "node": e.node, "event": e.kind.value, "detail": e.detail},
            ensure_ascii=False,
        )
        + "\n"
        for e in events
    )
    if lines:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as out:
            out.write(lines)


def read_events(path: Path) -> Iterator[Event]:
    """The log's events; a missing log has none, a damaged line is skipped."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return
    for line in text.splitlines():
        try:
            raw = json.loads(line)
            yield Event(float(raw["at"]), str(raw["node"]), EventKind(raw["event"]), raw["detail"])
        except (ValueError, KeyError, TypeError):
            log.warning("%s: skipped a damaged line", path)
