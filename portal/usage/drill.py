"""Drilling down through usage: all the caller may see, a domain and its projects, a project
and its users, a user in a project and their jobs (as XDMoD does), each over a period.

Who may open which level is checked here: a domain or project the caller holds no right on
reads as missing (404); inside a project, another member's jobs need ``jobs.read_all`` (the
project's managers and viewers, domain and platform admins), else 403. What each level shows
is further limited by :func:`portal.usage.service.scope`, so a member sees their own part.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from accounting.models import UsageRecord
from accounting.report import Dim, Report
from accounting.timeline import JobUse, Series, jobs, series
from portal.authz import Access, Perm
from portal.errors import Forbidden, NotFound
from portal.i18n import gettext
from portal.slurm import SlurmPort
from portal.tenancy.models import Domain, Project
from portal.usage.service import report_for, scope


@dataclass(frozen=True, slots=True)
class Level:
    """Where in the drill-down a page is: the tenants it is about and what its table and
    chart group by (``None``: a user's own jobs)."""

    domain: str | None = None
    project: str | None = None
    user: str | None = None
    by: Dim | None = Dim.PROJECT
    where: dict[Dim, list[str]] = field(default_factory=dict)

    @property
    def args(self) -> dict[str, Any]:
        """The filters as :func:`portal.usage.service.report_for` takes them."""
        names = {Dim.DOMAIN: "domain", Dim.PROJECT: "project", Dim.USER: "user"}
        return {
            "by": (self.by or Dim.USER).value,
            **{names[d]: v[0] for d, v in self.where.items()},
        }


def top(by: Dim) -> Level:
    """Everything the caller may see, grouped by ``by``."""
    return Level(by=by)


def domain(session: Session, access: Access, name: str) -> Level:
    row = session.scalar(select(Domain).where(Domain.name == name))
    if row is None or not access.on_domain(row.id):
        raise NotFound(gettext("No domain %(name)s.", name=name))
    return Level(domain=name, by=Dim.PROJECT, where={Dim.DOMAIN: [name]})


def _project(session: Session, access: Access, name: str) -> tuple[Project, str]:
    row = session.scalar(select(Project).where(Project.name == name))
    if row is None or not access.on_project(row):
        raise NotFound(gettext("No project %(name)s.", name=name))
    parent = session.get(Domain, row.domain_id)
    return row, parent.name if parent is not None else ""


def project(session: Session, access: Access, name: str) -> Level:
    _row, parent = _project(session, access, name)
    return Level(domain=parent, project=name, by=Dim.USER, where={Dim.PROJECT: [name]})


def user(session: Session, access: Access, project_name: str, username: str) -> Level:
    """A user's usage in a project: the user themselves, or whoever may read every member's
    jobs there."""
    row, parent = _project(session, access, project_name)
    if username != access.username and Perm.JOBS_READ_ALL not in access.on_project(row):
        raise Forbidden(
            gettext(
                "You may see only your own usage in the project %(project)s.",
                project=project_name,
            )
        )
    where = {Dim.PROJECT: [project_name], Dim.USER: [username]}
    return Level(domain=parent, project=project_name, user=username, by=None, where=where)


@dataclass(frozen=True, slots=True)
class View:
    """What a level's page shows over a period."""

    level: Level
    report: Report
    series: Series
    jobs: tuple[JobUse, ...] = ()


def view(
    session: Session,
    access: Access,
    level: Level,
    span: tuple[datetime, datetime],
    *,
    zone: tzinfo,
    port: SlurmPort | None = None,
) -> View:
    """A level's report, series over time and, for a user, their jobs; only what the caller
    may read."""
    start, end = span
    # pool utilisation (for platform admins) belongs to the whole pool, not to a drill-down
    rep = report_for(session, access, span, level.args, None if level.where else port)
    conn = session.connection()
    over_time = series(
        conn, start, end, by=level.by, zone=zone, where=level.where, scope=scope(session, access)
    )
    ran: tuple[JobUse, ...] = ()
    if level.user is not None:
        own = scope(session, access, UsageRecord)
        ran = tuple(jobs(conn, start, end, where=level.where, scope=own))
    return View(level, rep, over_time, ran)
