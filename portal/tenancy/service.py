"""Domains and projects: each is also a Slurm account, so names share one namespace."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, cast

from sqlalchemy import Select, select, update
from sqlalchemy.orm import Session

from portal.audit.models import AuditEvent
from portal.audit.service import record
from portal.authz import Access, Perm
from portal.errors import Conflict, ValidationFailed
from portal.i18n import gettext
from portal.identity.models import User
from portal.tenancy.models import Domain, GroupGrant, Membership, Project
from translations import N_

ACCOUNT_NAME = re.compile(r"[a-z][a-z0-9_-]{1,31}")
RESERVED = frozenset({"root"})
QOS_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")
ACCOUNT_RULE = N_(
    "A Slurm account name: a lower-case letter, then 1 to 31 lower-case letters, digits, _ "
    "or -; not root."
)


def check_account_name(session: Session, name: str, *, field: str = "name") -> None:
    if not ACCOUNT_NAME.fullmatch(name) or name in RESERVED:
        raise ValidationFailed({field: [gettext(ACCOUNT_RULE)]})
    taken = session.scalar(select(Domain.id).where(Domain.name == name)) or session.scalar(
        select(Project.id).where(Project.name == name)
    )
    if taken:
        raise Conflict(
            gettext(
                "The name %(name)s is taken: domains and projects are Slurm accounts, and "
                "each needs a name of its own.",
                name=name,
            )
        )
    if name in retired_names(session):
        raise Conflict(
            gettext(
                "The name %(name)s belonged to a domain or project that was deleted: Slurm's "
                "accounting, the usage pages and billing still keep its jobs, charges and "
                "balance under that name, so a new one takes a name of its own.",
                name=name,
            )
        )


def retired_names(session: Session, kind: str | None = None) -> frozenset[str]:
    """The names of the domains and projects (``kind``: one of them) the portal deleted, as
    its audit log recorded them: never given again, since usage, bills and Slurm's records
    stay under a tenant's name."""
    kinds = (kind,) if kind else ("domain", "project")
    gone = select(AuditEvent.before).where(AuditEvent.action.in_([f"{k}.delete" for k in kinds]))
    return frozenset(
        str(before["name"]) for before in session.scalars(gone) if before and before.get("name")
    )


def check_qos(value: str) -> str:
    names = [q.strip() for q in value.split(",") if q.strip()]
    if not names or not all(QOS_NAME.fullmatch(q) for q in names):
        raise ValidationFailed(
            {
                "qos": [
                    gettext(
                        "QOS names separated by commas, the default first (for example normal,low)."
                    )
                ]
            }
        )
    return ",".join(dict.fromkeys(names))


# ---------------------------------------------------------------------- domains
def domains_query(access: Access) -> Select[Domain]:
    stmt = select(Domain).order_by(Domain.name)
    ids = access.domain_ids()
    return stmt if ids is None else stmt.where(Domain.id.in_(ids))


def get_domain(session: Session, access: Access, domain_id: int, perm: Perm) -> Domain:
    domain = session.get(Domain, domain_id)
    access.require_domain(domain.id if domain else None, perm)
    return cast(Domain, domain)  # require_domain refuses a missing one


def create_domain(session: Session, access: Access, data: Mapping[str, Any]) -> Domain:
    access.require_platform_admin()
    check_account_name(session, data["name"])
    domain = Domain(name=data["name"], description=data.get("description", ""))
    session.add(domain)
    session.flush()
    record(
        session,
        access.user,
        "domain.create",
        "domain",
        domain.id,
        after=domain.audit_view(),
        domain_id=domain.id,
    )
    session.commit()
    return domain


def update_domain(
    session: Session, access: Access, domain_id: int, data: Mapping[str, Any]
) -> Domain:
    domain = get_domain(session, access, domain_id, Perm.DOMAIN_MANAGE)
    before = domain.audit_view()
    if "description" in data:
        domain.description = data["description"]
    record(
        session,
        access.user,
        "domain.update",
        "domain",
        domain.id,
        before=before,
        after=domain.audit_view(),
        domain_id=domain.id,
    )
    session.commit()
    return domain


def delete_domain(session: Session, access: Access, domain_id: int) -> None:
    access.require_platform_admin()
    domain = get_domain(session, access, domain_id, Perm.DOMAIN_MANAGE)
    if session.scalar(select(Project.id).where(Project.domain_id == domain.id).limit(1)):
        raise Conflict(gettext("The domain still has projects: delete them first."))
    # its users' accounts become the platform admins' (a later domain may get this id)
    session.execute(
        update(User).where(User.home_domain_id == domain.id).values(home_domain_id=None)
    )
    record(
        session,
        access.user,
        "domain.delete",
        "domain",
        domain.id,
        before=domain.audit_view(),
        domain_id=domain.id,
    )
    session.delete(domain)
    session.commit()


# ---------------------------------------------------------------------- projects
def projects_query(access: Access, domain_id: int | None = None) -> Select[Project]:
    stmt = select(Project).where(access.project_filter()).order_by(Project.name)
    if domain_id is not None:
        stmt = stmt.where(Project.domain_id == domain_id)
    return stmt


def get_project(session: Session, access: Access, project_id: int, perm: Perm) -> Project:
    return access.require_project(session.get(Project, project_id), perm)


def project_by_name(session: Session, name: str) -> Project | None:
    return session.scalar(select(Project).where(Project.name == name))


def create_project(session: Session, access: Access, data: Mapping[str, Any]) -> Project:
    domain = session.get(Domain, data["domain_id"])
    access.require_domain(domain.id if domain else None, Perm.DOMAIN_MANAGE)
    check_account_name(session, data["name"])
    project = Project(
        domain_id=data["domain_id"],
        name=data["name"],
        description=data.get("description", ""),
        qos=check_qos(data.get("qos") or "normal,low"),
    )
    session.add(project)
    session.flush()
    record(
        session,
        access.user,
        "project.create",
        "project",
        project.id,
        after=project.audit_view(),
        domain_id=project.domain_id,
    )
    session.commit()
    return project


def update_project(
    session: Session, access: Access, project_id: int, data: Mapping[str, Any]
) -> Project:
    project = get_project(session, access, project_id, Perm.PROJECT_MANAGE)
    if "qos" in data:
        # which QOS members may use is the domain admin's call, like quotas
        access.require_project(project, Perm.QUOTA_MANAGE)
    before = project.audit_view()
    if "description" in data:
        project.description = data["description"]
    if "qos" in data:
        project.qos = check_qos(data["qos"])
    record(
        session,
        access.user,
        "project.update",
        "project",
        project.id,
        before=before,
        after=project.audit_view(),
        domain_id=project.domain_id,
    )
    session.commit()
    return project


def delete_project(session: Session, access: Access, project_id: int) -> None:
    """Only an empty project goes; the caller removes its Slurm account
    (:func:`portal.quotas.service.enforce_domain`; the reconciler, should that fail)."""
    project = get_project(session, access, project_id, Perm.PROJECT_READ)
    access.require_domain(project.domain_id, Perm.DOMAIN_MANAGE, "project")
    if session.scalar(select(Membership.id).where(Membership.project_id == project.id).limit(1)):
        raise Conflict(gettext("The project still has members: remove them first."))
    if session.scalar(select(GroupGrant.id).where(GroupGrant.project_id == project.id).limit(1)):
        raise Conflict(
            gettext("User groups still hold roles on the project: take them back first.")
        )
    record(
        session,
        access.user,
        "project.delete",
        "project",
        project.id,
        before=project.audit_view(),
        domain_id=project.domain_id,
    )
    session.delete(project)
    session.commit()
