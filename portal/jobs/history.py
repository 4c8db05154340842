"""Job history: the portal's past submissions, listed per permission and re-run as the caller."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import ColumnElement, Select, false, or_, select
from sqlalchemy.orm import Session

from portal.authz import Access, Perm
from portal.errors import Forbidden, NotFound
from portal.jobs import service
from portal.jobs.models import SPEC, JobRecord
from portal.slurm import SlurmPort
from portal.tenancy.models import Project


def _readable(access: Access) -> ColumnElement[bool]:
    """Rows of others the caller may read: projects where they hold ``jobs.read_all``."""
    conds: list[ColumnElement[bool]] = []
    granted = [pid for pid, perms in access.grants.items() if Perm.JOBS_READ_ALL in perms]
    if granted:
        conds.append(JobRecord.project_id.in_(granted))
    if access.admin_of:
        in_domains = select(Project.id).where(Project.domain_id.in_(access.admin_of))
        conds.append(JobRecord.project_id.in_(in_domains.scalar_subquery()))
    return or_(*conds) if conds else false()


def history_query(access: Access, filters: Mapping[str, Any]) -> Select[JobRecord]:
    """Submissions the caller may see, newest first: their own, those of projects where they
    hold ``jobs.read_all``, and every one for platform admins."""
    stmt = select(JobRecord).order_by(JobRecord.id.desc())
    if not access.platform_admin:
        stmt = stmt.where(or_(JobRecord.user_id == access.user_id, _readable(access)))
    if filters.get("project_id"):
        stmt = stmt.where(JobRecord.project_id == filters["project_id"])
    if filters.get("mine"):
        stmt = stmt.where(JobRecord.user_id == access.user_id)
    return stmt


def record_of(session: Session, access: Access, job_id: int) -> JobRecord:
    """The latest portal submission that became ``job_id``, if the caller may see it."""
    rec = session.scalars(
        select(JobRecord).where(JobRecord.job_id == job_id).order_by(JobRecord.id.desc()).limit(1)
    ).first()
    if rec is None or not _may_read(session, access, rec):
        raise NotFound(f"job {job_id} was not submitted through the portal")
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
        raise Forbidden("only the user who submitted a job re-runs it")
    if rec.kind == SPEC:
        return service.submit_spec(
            session, access, port, rec.project_id, rec.request, rerun_of=job_id
        )
    data = {**rec.request, "project_id": rec.project_id}
    return service.submit(session, access, port, data, rerun_of=job_id)
