"""Usage reports, scoped to what the caller may see (checked here, not in the views).

Platform admins see everything; a domain admin sees the domain's usage; a member holding
``jobs.read_all`` on a project sees the project's; everyone sees their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, or_, select
from sqlalchemy.orm import Session

from accounting.ingest import IngestResult, import_from_slurm
from accounting.models import IngestState, Rollup
from accounting.report import Dim, Report, ReportError, build, capacity, parse_month
from portal.audit.service import record
from portal.authz import Access, Perm
from portal.errors import Conflict, SlurmUnavailable, ValidationFailed
from portal.nodes.service import read_nodes
from portal.slurm import SlurmPort
from portal.tenancy.models import Domain, Project
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.errors import SlurmError


def scope(session: Session, access: Access) -> ColumnElement[bool] | None:
    """The rollup rows the caller may read; ``None`` for all."""
    if access.platform_admin:
        return None
    conds: list[ColumnElement[bool]] = [Rollup.user == access.username]
    if access.admin_of:
        names = session.scalars(select(Domain.name).where(Domain.id.in_(access.admin_of))).all()
        conds.append(Rollup.domain.in_(names))
    readable = [pid for pid, perms in access.grants.items() if Perm.JOBS_READ_ALL in perms]
    if readable:
        names = session.scalars(select(Project.name).where(Project.id.in_(readable))).all()
        conds.append(Rollup.account.in_(names))
    return or_(*conds)


def period(args: dict[str, Any], now: datetime | None = None) -> tuple[datetime, datetime]:
    """``month``, or ``from`` and ``to``; the current month when none is given."""
    month, start, end = args.get("month"), args.get("from"), args.get("to")
    try:
        if month and (start or end):
            raise ValidationFailed({"month": ["give either month or from/to"]})
        if start or end:
            if not (start and end):
                raise ValidationFailed({"to" if start else "from": ["both from and to needed"]})
            return start, end
        return parse_month(month or (now or datetime.now(UTC)).strftime("%Y-%m"))
    except ReportError as exc:
        raise ValidationFailed({"month": [str(exc)]}) from exc


def report(
    session: Session,
    access: Access,
    args: dict[str, Any],
    port: SlurmPort | None = None,
) -> Report:
    """Usage by ``args["by"]`` over the asked period, within the caller's scope; pool
    utilisation for platform admins (from Slurm's nodes, when Slurm answers)."""
    start, end = period(args)
    pools = None
    if access.platform_admin and port is not None:
        try:
            pools = capacity(read_nodes(port))
        except SlurmUnavailable:
            pools = None
    try:
        return build(
            session.connection(),
            start,
            end,
            Dim(args.get("by", "project")),
            pools=pools,
            scope=scope(session, access),
        )
    except ReportError as exc:
        raise ValidationFailed({"from": [str(exc)]}) from exc


@dataclass(frozen=True, slots=True)
class ImportStatus:
    """Where the scheduled sacct import got to, per cluster (``aipool accounting run``)."""

    cluster: str
    imported_until: datetime
    updated_at: datetime


def import_status(session: Session) -> list[ImportStatus]:
    rows = session.execute(
        select(IngestState.cluster, IngestState.imported_until, IngestState.updated_at).order_by(
            IngestState.cluster
        )
    ).all()
    return [ImportStatus(*row) for row in rows]


def import_now(session: Session, access: Access, port: SlurmPort) -> IngestResult:
    """A platform admin's "import now": one sacct import into this database, audited.

    The scheduled import does the same every few minutes; this is for a report that cannot
    wait. It is idempotent, so running it beside the scheduler changes nothing twice."""
    access.require_platform_admin()
    client = getattr(port, "client", None)
    if not isinstance(client, SlurmClient):
        raise Conflict("this portal has no sacct client to import with (SLURM_ENV)")
    try:
        result = import_from_slurm(session.get_bind(), client)  # type: ignore[arg-type]
    except SlurmError as exc:
        raise SlurmUnavailable(f"sacct did not answer: {exc}") from exc
    record(
        session,
        access.user,
        "usage.import",
        "usage",
        client.cluster or "",
        after={"seen": result.seen, "written": result.written},
    )
    session.commit()
    return result
