"""The reconciler of portal memberships and Slurm associations: snapshot → plan → apply.

:func:`portal.quotas.service.snapshot` reads what the portal wants and what Slurm holds;
:func:`portal.quotas.drift.diff` plans (pure); :func:`reconcile` applies the plan through the
Slurm port (additions, then removals: :func:`portal.quotas.service.send` is the only writer)
and records what it changed in the audit log. The control daemon (``aipool reconcile``) runs it
on every full pass; ``aipool reconcile --slurm-check`` shows the plan and changes nothing
unless ``--sync`` is given.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from portal.audit.service import record
from portal.identity.models import User
from portal.quotas import drift
from portal.quotas.service import send, snapshot
from portal.slurm import SlurmPort


@dataclass
class SyncReport:
    plan: drift.SyncPlan
    applied: bool
    commands: list[str] = field(default_factory=list)  # planned (dry run) or sent

    def lines(self) -> list[str]:
        return self.plan.lines()


def reconcile(
    session: Session, port: SlurmPort, *, sync: bool, actor: User | None = None
) -> SyncReport:
    """Plan the drift both ways; when ``sync``, apply it, audit it and commit."""
    have = tuple(port.associations())
    planned = drift.diff(snapshot(session, have))
    if not sync or planned.empty:
        return SyncReport(planned, applied=False, commands=planned.commands(have))
    sent = send(port, planned)
    record(
        session, actor, "slurm.sync", "slurm", "accounts",
        after={"commands": sent, **drift.changes(planned)},
    )  # fmt: skip
    session.commit()
    return SyncReport(planned, applied=True, commands=sent)
