"""Usage reports, scoped to what the caller may see (checked here, not in the views).

Platform admins see everything; a domain admin sees the domain's usage; a member holding
``jobs.read_all`` on a project sees the project's; everyone sees their own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, or_, select
from sqlalchemy.orm import Session

from accounting.ingest import IngestResult, import_from_slurm
from accounting.models import IngestState, Rollup, UsageRecord
from accounting.report import (
    Dim,
    Report,
    ReportError,
    build,
    capacity,
    check_period,
    parse_month,
)
from portal.audit.service import record
from portal.authz import Access, Perm
from portal.errors import Conflict, SlurmUnavailable, ValidationFailed
from portal.i18n import current, gettext
from portal.nodes.service import read_nodes
from portal.slurm import SlurmPort
from portal.tenancy.models import Domain, Project
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.errors import SlurmError
from translations import translate


def scope(
    session: Session, access: Access, table: type[Rollup] | type[UsageRecord] = Rollup
) -> ColumnElement[bool] | None:
    """The rollup rows (or, with ``table``, the job rows) the caller may read; ``None`` for
    all: their own, their domains' as a domain admin, and their projects' where they may read
    every member's jobs (``jobs.read_all``)."""
    if access.platform_admin:
        return None
    conds: list[ColumnElement[bool]] = [table.user == access.username]
    if access.admin_of:
        names = session.scalars(select(Domain.name).where(Domain.id.in_(access.admin_of))).all()
        conds.append(table.domain.in_(names))
    readable = [pid for pid, perms in access.grants.items() if Perm.JOBS_READ_ALL in perms]
    if readable:
        names = session.scalars(select(Project.name).where(Project.id.in_(readable))).all()
        conds.append(table.account.in_(names))
    return or_(*conds)


def filters(args: Mapping[str, Any]) -> dict[Dim, Iterable[str]]:
    """The query's ``domain``, ``project`` and ``user`` (each narrows what the scope shows,
    never widens it)."""
    out: dict[Dim, Iterable[str]] = {}
    for name, dim in (("domain", Dim.DOMAIN), ("project", Dim.PROJECT), ("user", Dim.USER)):
        if args.get(name):
            out[dim] = [args[name]]
    return out


def period(args: dict[str, Any], now: datetime | None = None) -> tuple[datetime, datetime]:
    """``month``, or ``from`` and ``to``; the current month when none is given."""
    month, start, end = args.get("month"), args.get("from"), args.get("to")
    if month and (start or end):
        raise ValidationFailed({"month": [gettext("Give either a month, or from and to.")]})
    if start or end:
        if not (start and end):
            both = gettext("Give both from and to.")
            raise ValidationFailed({"to" if start else "from": [both]})
        try:
            check_period(start, end)
        except ReportError as exc:
            raise ValidationFailed({"from": [translate(current(), exc.message)]}) from exc
        return start, end
    try:
        return parse_month(month or (now or datetime.now(UTC)).strftime("%Y-%m"))
    except ReportError as exc:
        raise ValidationFailed({"month": [translate(current(), exc.message)]}) from exc


def report(
    session: Session,
    access: Access,
    args: dict[str, Any],
    port: SlurmPort | None = None,
) -> Report:
    """Usage by ``args["by"]`` over the asked period, within the caller's scope; pool
    utilisation for platform admins (from Slurm's nodes, when Slurm answers)."""
    start, end = period(args)
    return report_for(session, access, (start, end), args, port)


def report_for(
    session: Session,
    access: Access,
    span: tuple[datetime, datetime],
    args: Mapping[str, Any],
    port: SlurmPort | None = None,
) -> Report:
    """:func:`report` over [start, end), narrowed by the ``domain``, ``project`` and
    ``user`` of ``args``."""
    start, end = span
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
            where=filters(args),
            pools=pools,
            scope=scope(session, access),
            job_scope=scope(session, access, UsageRecord),
        )
    except ReportError as exc:
        raise ValidationFailed({"from": [translate(current(), exc.message)]}) from exc


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
        raise Conflict(gettext("This portal has no sacct client to import with (SLURM_ENV)."))
    try:
        result = import_from_slurm(session.get_bind(), client)  # type: ignore[arg-type]
    except SlurmError as exc:
        raise SlurmUnavailable(gettext("sacct did not answer: %(error)s", error=str(exc))) from exc
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
