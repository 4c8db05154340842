"""One health check against the real cluster: read, plan (pure), apply, tell, remember.

The only module of :mod:`slurm_plugins.health` that talks to Slurm (through the client:
``sinfo`` to read nodes, ``scontrol update NodeName=…`` to drain and resume). Writes are
applied node by node; a node whose write fails keeps its previous record and its alerts are
held back, so the next check retries it whole. Work on a drained node is moved by the
policy daemon's ``reschedule`` policy (docs/policy.md), not here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from plumbing.notify import Notifier
from plumbing.store import JsonStore, exclusive
from slurm_plugins.client import SlurmClient, SlurmError
from slurm_plugins.client.models import Node
from slurm_plugins.health.config import HealthConfig
from slurm_plugins.health.plan import HealthPlan, HealthState, plan
from slurm_plugins.health.verdict import NodeView
from slurm_plugins.node import Clock, read_reports

log = logging.getLogger("aipool.health")

STATE = "health.json"
LOCK = "health.lock"


class CheckerLocked(RuntimeError):
    """Another health checker uses this state directory."""


def node_view(node: Node) -> NodeView:
    flags = set(node.flags)
    if node.state.value in {"DRAIN", "DRAINED", "DRAINING"}:
        flags.add(node.state.value)
    return NodeView(
        name=node.name,
        state=node.state.value,
        flags=frozenset(flags),
        reason=node.reason,
        gpus=node.gres_total("gpu"),
    )


class HealthStore(JsonStore[HealthState]):
    """``<state_dir>/health.json``, written atomically; a damaged file reads as empty (the
    worst that costs is one repeated alert and a restarted recovery streak)."""

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)
        super().__init__(self.dir / STATE, HealthState, keep_previous=False, what="health state")

    @contextmanager
    def locked(self) -> Iterator[None]:
        with exclusive(self.dir, LOCK, CheckerLocked(f"another health checker runs on {self.dir}")):
            yield


@dataclass
class CheckReport:
    plan: HealthPlan
    #: Nodes whose drain or resume failed this time (retried next check).
    failed: dict[str, str] = field(default_factory=dict)
    #: Nodes the checker holds drained after this check (as it would, with --dry-run).
    drained: frozenset[str] = frozenset()

    def lines(self) -> list[str]:
        out = []
        for v in self.plan.verdicts:
            word = "FAILING" if v.failing else "ok" if v.healthy else "unknown"
            details = "; ".join(f.detail for f in v.findings)
            out.append(f"{v.node:<12} {word:<8} {details}".rstrip())
        out += [f"drain {d.node}: {d.reason}" for d in self.plan.drains]
        out += [f"resume {r.node}: {r.reason}" for r in self.plan.resumes]
        out += [f"alert: {n.subject}" for n in self.plan.notifications]
        out += [f"failed {n}: {e}" for n, e in sorted(self.failed.items())]
        return out


class Checker:
    def __init__(
        self,
        config: HealthConfig,
        client: SlurmClient,
        notifier: Notifier,
        *,
        state_dir: Path,
        admins: tuple[str, ...] = ("root",),
        clock: Callable[[], float] = time.time,
        controller_clock: Callable[[], Clock] | None = None,
    ) -> None:
        self.config = config
        self.client = client
        self.notifier = notifier
        self.store = HealthStore(state_dir)
        self.admins = admins
        self.clock = clock
        self.controller_clock = controller_clock

    def check(self) -> CheckReport:
        """Read → plan → apply; Slurm being unreachable raises (nothing changed)."""
        nodes = [node_view(n) for n in self.client.nodes()]
        reports = read_reports(self.config.reports) if self.config.reports else {}
        own = self.controller_clock() if self.controller_clock else None
        state = self.store.load()
        p = plan(
            nodes,
            reports,
            state,
            now=self.clock(),
            config=self.config,
            admins=self.admins,
            controller_offset_s=own.offset_s if own else None,
        )
        failed: dict[str, str] = {}
        for d in p.drains:
            self._write(failed, d.node, state="DRAIN", reason=d.reason)
        for r in p.resumes:
            self._write(failed, r.node, state="RESUME")
        records = dict(p.state.nodes)
        for node in failed:
            records.pop(node, None)
            if node in state.nodes:
                records[node] = state.nodes[node]
        held = frozenset(n for n, r in records.items() if r.drained_at is not None)
        report = CheckReport(p, failed, held)
        if self.client.dry_run:
            return report
        self.store.save(replace(p.state, nodes=records))
        for alert in p.alerts:
            if alert.node not in failed:
                self.notifier.send(alert.note)
        return report

    def _write(
        self, failed: dict[str, str], node: str, state: str, reason: str | None = None
    ) -> None:
        try:
            self.client.update_node(node, state=state, reason=reason)
            if not self.client.dry_run:
                log.warning("node %s: %s %s", node, state, reason or "")
        except SlurmError as exc:
            log.error("node %s: %s failed: %s", node, state, exc)
            failed[node] = str(exc)
