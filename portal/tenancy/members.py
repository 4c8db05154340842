"""Project memberships and domain admins."""

from __future__ import annotations

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from portal.audit.service import record
from portal.authz import Access, Perm, forget
from portal.errors import Conflict, NotFound
from portal.i18n import gettext
from portal.identity.service import user_by_name
from portal.roles.models import Role
from portal.tenancy.models import DomainAdmin, Membership
from portal.tenancy.service import get_domain, get_project


def _role(session: Session, role_id: int) -> Role:
    role = session.get(Role, role_id)
    if role is None:
        raise NotFound(gettext("No such role."))
    return role


def members_query(session: Session, access: Access, project_id: int) -> Select[Membership]:
    get_project(session, access, project_id, Perm.MEMBERS_READ)
    return select(Membership).where(Membership.project_id == project_id).order_by(Membership.id)


def _membership(session: Session, project_id: int, user_id: int) -> Membership:
    m = session.scalar(
        select(Membership).where(Membership.project_id == project_id, Membership.user_id == user_id)
    )
    if m is None:
        raise NotFound(gettext("The user is not a member of this project."))
    return m


def get_member(
    session: Session, access: Access, project_id: int, user_id: int, perm: Perm = Perm.MEMBERS_READ
) -> Membership:
    """One membership of a project, for a caller with ``perm`` on it (``MEMBERS_MANAGE``
    before a change: what the change's version is checked against)."""
    project = get_project(session, access, project_id, perm)
    return _membership(session, project.id, user_id)


def member_etag_data(m: Membership) -> dict[str, int]:
    """What a membership's ETag is computed from: which membership, and the role it gives
    (a member removed and added again is another membership)."""
    return {"id": m.id, "user_id": m.user_id, "role_id": m.role_id}


def add_member(
    session: Session, access: Access, project_id: int, username: str, role_id: int
) -> Membership:
    project = get_project(session, access, project_id, Perm.MEMBERS_MANAGE)
    user = user_by_name(session, username)
    role = _role(session, role_id)
    exists = session.scalar(
        select(Membership.id).where(
            Membership.project_id == project.id, Membership.user_id == user.id
        )
    )
    if exists:
        raise Conflict(
            gettext(
                "%(user)s is a member of %(project)s already.", user=username, project=project.name
            )
        )
    m = Membership(project_id=project.id, user_id=user.id, role_id=role.id)
    session.add(m)
    session.flush()
    record(
        session,
        access.user,
        "member.add",
        "membership",
        m.id,
        after=m.audit_view(),
        domain_id=project.domain_id,
    )
    session.commit()
    forget()
    return m


def update_member(
    session: Session, access: Access, project_id: int, user_id: int, role_id: int
) -> Membership:
    project = get_project(session, access, project_id, Perm.MEMBERS_MANAGE)
    m = _membership(session, project.id, user_id)
    before = m.audit_view()
    m.role_id = _role(session, role_id).id
    session.flush()
    session.refresh(m)
    record(
        session,
        access.user,
        "member.update",
        "membership",
        m.id,
        before=before,
        after=m.audit_view(),
        domain_id=project.domain_id,
    )
    session.commit()
    forget()
    return m


def remove_member(session: Session, access: Access, project_id: int, user_id: int) -> None:
    project = get_project(session, access, project_id, Perm.MEMBERS_MANAGE)
    m = _membership(session, project.id, user_id)
    record(
        session,
        access.user,
        "member.remove",
        "membership",
        m.id,
        before=m.audit_view(),
        domain_id=project.domain_id,
    )
    session.delete(m)
    session.commit()
    forget()


# ---------------------------------------------------------------------- domain admins
def admins_query(session: Session, access: Access, domain_id: int) -> Select[DomainAdmin]:
    get_domain(session, access, domain_id, Perm.DOMAIN_MANAGE)
    return select(DomainAdmin).where(DomainAdmin.domain_id == domain_id).order_by(DomainAdmin.id)


def add_admin(session: Session, access: Access, domain_id: int, username: str) -> DomainAdmin:
    access.require_platform_admin()
    domain = get_domain(session, access, domain_id, Perm.DOMAIN_MANAGE)
    user = user_by_name(session, username)
    if session.scalar(
        select(DomainAdmin.id).where(
            DomainAdmin.domain_id == domain.id, DomainAdmin.user_id == user.id
        )
    ):
        raise Conflict(
            gettext(
                "%(user)s is an admin of %(domain)s already.", user=username, domain=domain.name
            )
        )
    admin = DomainAdmin(domain_id=domain.id, user_id=user.id)
    session.add(admin)
    session.flush()
    record(
        session,
        access.user,
        "domain_admin.add",
        "domain_admin",
        admin.id,
        after={"domain_id": domain.id, "user_id": user.id},
        domain_id=domain.id,
    )
    session.commit()
    return admin


def remove_admin(session: Session, access: Access, domain_id: int, user_id: int) -> None:
    access.require_platform_admin()
    admin = session.scalar(
        select(DomainAdmin).where(
            DomainAdmin.domain_id == domain_id, DomainAdmin.user_id == user_id
        )
    )
    if admin is None:
        raise NotFound(gettext("The user is not an admin of this domain."))
    record(
        session,
        access.user,
        "domain_admin.remove",
        "domain_admin",
        admin.id,
        before={"domain_id": domain_id, "user_id": user_id},
        domain_id=domain_id,
    )
    session.delete(admin)
    session.commit()
