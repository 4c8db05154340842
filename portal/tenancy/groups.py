"""User groups of a domain, and the roles they hold on the domain's projects."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Select, delete, select
from sqlalchemy.orm import Session

from portal.audit.service import record
from portal.authz import Access, Perm, forget
from portal.errors import Conflict, NotFound, ValidationFailed
from portal.i18n import gettext
from portal.identity.service import user_by_name
from portal.roles.models import Role
from portal.tenancy.models import Group, GroupGrant, GroupMember, Project
from portal.tenancy.service import get_domain


def groups_query(access: Access, domain_id: int | None = None) -> Select[Group]:
    stmt = select(Group).order_by(Group.domain_id, Group.name)
    if not access.platform_admin:
        stmt = stmt.where(Group.domain_id.in_(access.admin_of))
    if domain_id is not None:
        stmt = stmt.where(Group.domain_id == domain_id)
    return stmt


def get_group(session: Session, access: Access, group_id: int) -> Group:
    group = session.get(Group, group_id)
    # groups are the domain admins' business: others do not see them at all
    if group is None or Perm.DOMAIN_MANAGE not in access.on_domain(group.domain_id):
        raise NotFound(gettext("No such user group."))
    return group


def create_group(session: Session, access: Access, data: Mapping[str, Any]) -> Group:
    domain = get_domain(session, access, data["domain_id"], Perm.DOMAIN_MANAGE)
    if session.scalar(
        select(Group.id).where(Group.domain_id == domain.id, Group.name == data["name"])
    ):
        raise Conflict(
            gettext(
                "The domain %(domain)s has a user group %(name)s already.",
                domain=domain.name,
                name=data["name"],
            )
        )
    group = Group(domain_id=domain.id, name=data["name"], description=data.get("description", ""))
    session.add(group)
    session.flush()
    record(
        session,
        access.user,
        "group.create",
        "group",
        group.id,
        after=group.audit_view(),
        domain_id=domain.id,
    )
    session.commit()
    return group


def update_group(session: Session, access: Access, group_id: int, data: Mapping[str, Any]) -> Group:
    group = get_group(session, access, group_id)
    before = group.audit_view()
    if "name" in data and data["name"] != group.name:
        if session.scalar(
            select(Group.id).where(Group.domain_id == group.domain_id, Group.name == data["name"])
        ):
            raise Conflict(gettext("A user group %(name)s exists already.", name=data["name"]))
        group.name = data["name"]
    if "description" in data:
        group.description = data["description"]
    record(
        session,
        access.user,
        "group.update",
        "group",
        group.id,
        before=before,
        after=group.audit_view(),
        domain_id=group.domain_id,
    )
    session.commit()
    return group


def delete_group(session: Session, access: Access, group_id: int) -> None:
    group = get_group(session, access, group_id)
    record(
        session,
        access.user,
        "group.delete",
        "group",
        group.id,
        before=group.audit_view(),
        domain_id=group.domain_id,
    )
    # plain DELETEs: the ORM knows of no relationship that would order them before the group's
    session.execute(delete(GroupMember).where(GroupMember.group_id == group.id))
    session.execute(delete(GroupGrant).where(GroupGrant.group_id == group.id))
    session.delete(group)
    session.commit()
    forget()


def group_members(session: Session, access: Access, group_id: int) -> list[GroupMember]:
    group = get_group(session, access, group_id)
    return list(session.scalars(select(GroupMember).where(GroupMember.group_id == group.id)))


def add_group_member(session: Session, access: Access, group_id: int, username: str) -> GroupMember:
    group = get_group(session, access, group_id)
    user = user_by_name(session, username)
    if session.scalar(
        select(GroupMember.id).where(
            GroupMember.group_id == group.id, GroupMember.user_id == user.id
        )
    ):
        raise Conflict(
            gettext("%(user)s is in %(group)s already.", user=username, group=group.name)
        )
    gm = GroupMember(group_id=group.id, user_id=user.id)
    session.add(gm)
    session.flush()
    record(
        session,
        access.user,
        "group.member_add",
        "group",
        group.id,
        after={"user_id": user.id},
        domain_id=group.domain_id,
    )
    session.commit()
    forget()
    return gm


def remove_group_member(session: Session, access: Access, group_id: int, user_id: int) -> None:
    group = get_group(session, access, group_id)
    gm = session.scalar(
        select(GroupMember).where(GroupMember.group_id == group.id, GroupMember.user_id == user_id)
    )
    if gm is None:
        raise NotFound(gettext("The user is not in this group."))
    record(
        session,
        access.user,
        "group.member_remove",
        "group",
        group.id,
        before={"user_id": user_id},
        domain_id=group.domain_id,
    )
    session.delete(gm)
    session.commit()
    forget()


def group_grants(session: Session, access: Access, group_id: int) -> list[GroupGrant]:
    group = get_group(session, access, group_id)
    return list(session.scalars(select(GroupGrant).where(GroupGrant.group_id == group.id)))


def find_grant(
    session: Session, access: Access, group_id: int, project_id: int, *, lock: bool = False
) -> GroupGrant | None:
    """The group's grant on a project, if it has one; ``lock`` holds its row until the
    transaction ends (a version check, then the write)."""
    group = get_group(session, access, group_id)
    stmt = select(GroupGrant).where(
        GroupGrant.group_id == group.id, GroupGrant.project_id == project_id
    )
    return session.scalar(stmt.with_for_update() if lock else stmt)


def grant_etag_data(row: GroupGrant | None) -> dict[str, int] | None:
    """What a grant's ETag is computed from: which grant, and the role it gives (None while
    the group has no grant on the project)."""
    return {"id": row.id, "role_id": row.role_id} if row is not None else None


def grant(
    session: Session, access: Access, group_id: int, project_id: int, role_id: int
) -> GroupGrant:
    group = get_group(session, access, group_id)
    project = session.get(Project, project_id)
    if project is None or project.domain_id != group.domain_id:
        raise ValidationFailed({"project_id": [gettext("Choose a project of the group's domain.")]})
    if session.get(Role, role_id) is None:
        raise ValidationFailed({"role_id": [gettext("No such role.")]})
    row = session.scalar(
        select(GroupGrant).where(
            GroupGrant.group_id == group.id, GroupGrant.project_id == project.id
        )
    )
    before = {"project_id": project.id, "role_id": row.role_id} if row else None
    if row is None:
        row = GroupGrant(group_id=group.id, project_id=project.id, role_id=role_id)
        session.add(row)
    else:
        row.role_id = role_id
    session.flush()
    session.refresh(row)
    record(
        session,
        access.user,
        "group.grant",
        "group",
        group.id,
        before=before,
        after={"project_id": project.id, "role_id": role_id},
        domain_id=group.domain_id,
    )
    session.commit()
    forget()
    return row


def revoke(session: Session, access: Access, group_id: int, project_id: int) -> None:
    group = get_group(session, access, group_id)
    row = session.scalar(
        select(GroupGrant).where(
            GroupGrant.group_id == group.id, GroupGrant.project_id == project_id
        )
    )
    if row is None:
        raise NotFound(gettext("The group holds no role on this project."))
    record(
        session,
        access.user,
        "group.revoke",
        "group",
        group.id,
        before={"project_id": project_id, "role_id": row.role_id},
        domain_id=group.domain_id,
    )
    session.delete(row)
    session.commit()
    forget()
