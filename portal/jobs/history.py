"""Job history: the portal's past submissions, listed per permission and re-run as the caller."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import ColumnElement, Integer, or_, select
from sqlalchemy.orm import InstrumentedAttribute, Session
from sqlalchemy.sql.elements import UnaryExpression
from sqlalchemy.sql.operators import custom_op

from portal.authz import Access, Perm
from portal.errors import Conflict, Forbidden, NotFound
from portal.i18n import gettext
from portal.jobs import service
from portal.jobs.models import SPEC, JobRecord
from portal.pagination import PageParams, count_of, page_of_query
from portal.slurm import SlurmPort
from portal.tenancy.models import Project
from slurm_plugins.client.errors import SlurmError
from slurm_plugins.client.models import Job


def _no_index(column: InstrumentedAttribute[int]) -> ColumnElement[int]:
    """``+column``: the same value, but SQLite's planner may not use an index for the term
    (SQLite's documented way to steer it). See :func:`history_page`."""
    return UnaryExpression(column.expression, operator=custom_op("+"), type_=Integer)


def _readable_projects(session: Session, access: Access) -> list[int]:
    """Projects whose every submission the caller may read (``jobs.read_all``)."""
    granted = {pid for pid, perms in access.grants.items() if Perm.JOBS_READ_ALL in perms}
    if access.admin_of:
        granted.update(
            session.scalars(select(Project.id).where(Project.domain_id.in_(access.admin_of)))
        )
    return sorted(granted)


def history_page(
    session: Session, access: Access, filters: Mapping[str, Any], params: PageParams
) -> list[JobRecord]:
    """One page of the submissions the caller may see, newest first: their own, those of
    projects where they hold ``jobs.read_all``, and every one for platform admins.

    With 100,000 rows the plain ``user_id = me OR project_id IN (…)`` made SQLite gather
    every matching row through both indexes and sort them (~120 ms for a domain admin);
    the page instead walks the table newest first and stops at the page (~1 ms), and the
    total is counted per branch from the two covering indexes (~10 ms)."""
    stmt = select(JobRecord).order_by(JobRecord.id.desc())
    if filters.get("project_id"):
        stmt = stmt.where(JobRecord.project_id == filters["project_id"])
    mine = JobRecord.user_id == access.user_id
    if filters.get("mine"):
        stmt = stmt.where(mine)
    if access.platform_admin or filters.get("mine"):
        return page_of_query(session, stmt, params)
    readable = _readable_projects(session, access)
    if not readable:
        return page_of_query(session, stmt.where(mine), params)
    theirs = JobRecord.project_id.in_(readable)
    rows = stmt.where(
        or_(
            _no_index(JobRecord.user_id) == access.user_id,
            _no_index(JobRecord.project_id).in_(readable),
        )
    )
    total = select(
        count_of(stmt.where(theirs)).scalar_subquery()
        + count_of(stmt.where(mine, ~theirs)).scalar_subquery()
    )
    return page_of_query(session, rows, params, count=total)


def record_of(session: Session, access: Access, job_id: int) -> JobRecord:
    """The latest portal submission that became ``job_id``, if the caller may see it."""
    rec = session.scalars(
        select(JobRecord).where(JobRecord.job_id == job_id).order_by(JobRecord.id.desc()).limit(1)
    ).first()
    if rec is None or not _may_read(session, access, rec):
        raise NotFound(
            gettext(
                "Job %(id)d was not submitted through the portal, or is not yours to see.",
                id=job_id,
            )
        )
    return rec


def _may_read(session: Session, access: Access, rec: JobRecord) -> bool:
    if access.platform_admin or rec.user_id == access.user_id:
        return True
    project = session.get(Project, rec.project_id)
    return project is not None and Perm.JOBS_READ_ALL in access.on_project(project)


def rerun(session: Session, access: Access, port: SlurmPort, job_id: int) -> int:
    """Submit ``job_id``'s stored request again, as the caller, who must be its owner and
    still hold ``jobs.submit`` on its project (checked again by the submission)."""
    rec = record_of(session, access, job_id)
    if rec.user_id != access.user_id:
        raise Forbidden(gettext("Only the user who submitted a job runs it again."))
    try:
        now = port.job(job_id)
    except SlurmError:
        now = None  # Slurm does not answer: the submission below says so
    [row] = rows_with_jobs([rec], [now] if now is not None else [])
    if row.job is not None and row.job.state.is_active:
        raise Conflict(
            gettext(
                "Job %(id)d is still queued or running: run it again once it has ended, "
                "or cancel it first.",
                id=job_id,
            )
        )
    if rec.kind == SPEC:
        return service.submit_spec(
            session, access, port, rec.project_id, rec.request, rerun_of=job_id
        )
    data = {**rec.request, "project_id": rec.project_id}
    return service.submit(session, access, port, data, rerun_of=job_id)


@dataclass(frozen=True, slots=True)
class Row:
    """A submission and its job as Slurm knows it now (queue or accounting); ``job`` is
    ``None`` when Slurm does not answer or has forgotten it."""

    record: JobRecord
    job: Job | None


#: A job whose submit time is this much before the record's is another job of the same id
#: (a rebuilt cluster numbers its jobs again); clocks of portal and controller may differ.
SAME_JOB_SLACK = timedelta(minutes=10)


def rows_with_jobs(records: Sequence[JobRecord], jobs: Sequence[Job]) -> list[Row]:
    """Each record with the latest job of its id submitted no earlier than it was."""
    by_id: dict[int, list[Job]] = defaultdict(list)
    for job in jobs:
        by_id[job.job_id].append(job)
    out = []
    for rec in records:
        fits = [
            j
            for j in by_id.get(rec.job_id, ())
            if j.submit_time is None or j.submit_time >= rec.submitted_at - SAME_JOB_SLACK
        ]
        best = max(fits, key=lambda j: j.submit_time or rec.submitted_at, default=None)
        out.append(Row(rec, best))
    return out
