"""The only writer: turn a :class:`Plan` into as few Slurm calls as it can.

One call per kind of change (``scontrol hold ids``, one ``scontrol`` reading every job
update on stdin, ``scontrol release ids``, …); a plan without changes makes none. The order
is chosen for safety: holds first (nothing we hold may start meanwhile), then node lists,
QOS and SiteFactors, then releases (a released job already has its new lists and QOS), then signals,
requeues and cancels, then node weights.

Crash safety: before any call, the state is saved with the union of old and new holds
(write-ahead), so a daemon killed mid-apply never loses track of a hold it made; after the
calls, the plan's state is saved minus what failed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TypeVar

from plumbing.notify import Notifier
from slurm_plugins.client import (
    ControllerUnavailable,
    JobNotFound,
    JobUpdate,
    SlurmClient,
    SlurmError,
)
from slurm_plugins.policy.plan import Action, Plan
from slurm_plugins.policy.snapshot import DaemonState
from slurm_plugins.policy.state import StateStore

log = logging.getLogger("aipool.policy")


@dataclass
class ApplyResult:
    calls: int = 0
    failed: dict[int, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    state: DaemonState = field(default_factory=DaemonState)


class _Writer:
    """Counts calls and isolates failures: a batch that fails is retried job by job."""

    def __init__(self, result: ApplyResult, ping: Callable[[], bool]) -> None:
        self.result = result
        self._ping = ping

    def batch(self, what: str, ids: Sequence[int], call: Callable[[Sequence[int]], object]) -> None:
        if not ids:
            return
        self.result.calls += 1
        try:
            call(ids)
            return
        except JobNotFound:
            pass  # some job left the queue meanwhile: find out which below
        except ControllerUnavailable:
            raise  # nothing to isolate: the cycle fails and the next one tries again
        except SlurmError as exc:
            # a failure that does not say the controller is gone may still mean it is (an
            # empty message): ask before retrying job by job, a full timeout per job
            if not self._ping():
                raise ControllerUnavailable(f"{what} failed and slurmctld does not answer") from exc
            log.warning("%s of %d jobs failed (%s); retrying one by one", what, len(ids), exc)
        if len(ids) == 1:
            self.result.failed[ids[0]] = what
            return
        for i in ids:
            self.result.calls += 1
            try:
                call([i])
            except SlurmError as exc:
                self.result.failed[i] = what
                self.result.errors.append(f"{what} {i}: {exc}")


def _write_ahead(old: DaemonState, plan: Plan) -> DaemonState:
    holds = {**old.holds, **plan.state.holds}
    return replace(plan.state, holds=holds)


def apply(
    plan: Plan,
    client: SlurmClient,
    *,
    old_state: DaemonState,
    store: StateStore | None = None,
    notifier: Notifier | None = None,
) -> ApplyResult:
    """Make Slurm match the plan; idempotent (a plan already applied changes nothing)."""
    result = ApplyResult()
    w = _Writer(result, client.ping)
    dry = client.dry_run
    if store is not None and not dry and not plan.empty:
        store.save(_write_ahead(old_state, plan))

    w.batch("hold", [h.job_id for h in plan.holds], client.hold)
    if plan.job_changes:
        updates = [
            JobUpdate(
                c.job_id,
                site_factor=c.site_factor,
                req_nodes=c.req_nodes,
                exc_nodes=c.exc_nodes,
                qos=c.qos,
                start_now=c.start_now,
            )
            for c in plan.job_changes
        ]
        by_id = {u.job_id: u for u in updates}
        w.batch("update", list(by_id), lambda ids: client.update_jobs(by_id[i] for i in ids))
    w.batch("release", [h.job_id for h in plan.releases], client.release)
    _signals(plan, client, w)
    w.batch("requeue", _ids(plan, Action.REQUEUE), client.requeue)
    w.batch(
        "requeue-hold", _ids(plan, Action.REQUEUE_HOLD), lambda ids: client.requeue(ids, hold=True)
    )
    w.batch("cancel", _ids(plan, Action.CANCEL), client.cancel)
    by_weight: dict[int, list[str]] = {}
    for nw in plan.node_weights:
        by_weight.setdefault(nw.weight, []).append(nw.node)
    for weight, nodes in sorted(by_weight.items()):  # one call per distinct weight
        result.calls += 1
        try:
            client.update_node(",".join(sorted(nodes)), weight=weight)
        except SlurmError as exc:
            result.errors.append(f"weight {','.join(nodes)}: {exc}")
    if notifier is not None:
        for note in plan.notifications:
            notifier.send(note)

    result.state = _after(plan, result.failed)
    if store is not None and not dry:
        store.save(result.state)
    if result.errors:
        log.warning("apply: %d failures: %s", len(result.errors), "; ".join(result.errors[:5]))
    return result


def _ids(plan: Plan, action: Action) -> list[int]:
    return [a.job_id for a in plan.actions_of(action)]


def _signals(plan: Plan, client: SlurmClient, w: _Writer) -> None:
    by_signal: dict[str, list[int]] = {}
    for a in plan.actions_of(Action.SIGNAL):
        by_signal.setdefault(a.signal or "USR1", []).append(a.job_id)
    for sig, ids in sorted(by_signal.items()):
        w.batch(f"signal {sig}", ids, partial(client.cancel, signal=sig))


def _after(plan: Plan, failed: Mapping[int, str]) -> DaemonState:
    """The plan's state without what did not happen."""
    s = plan.state
    if not failed:
        return s
    # a failed checkpoint signal still counts as sent: the requeue follows after the delay
    # all the same, so a job that cannot be signalled is not signalled forever
    return replace(
        s,
        holds=_keep(s.holds, failed, {"hold", "requeue-hold"}),
        site_factors=_keep(s.site_factors, failed, {"update"}),
        requeued=_keep(s.requeued, failed, {"requeue", "requeue-hold"}),
    )


M = TypeVar("M")


def _keep(d: Mapping[int, M], failed: Mapping[int, str], kinds: set[str]) -> dict[int, M]:
    return {i: m for i, m in d.items() if failed.get(i) not in kinds}
