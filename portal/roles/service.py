"""Project roles: the built-in ones are seeded by the first migration and cannot change."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from portal.audit.service import record
from portal.authz import BUILTIN_ROLES, GRANTABLE, Access
from portal.errors import Conflict, NotFound, ValidationFailed
from portal.i18n import gettext
from portal.roles.models import Role
from portal.tenancy.models import GroupGrant, Membership


def roles_query() -> Select[Role]:
    return select(Role).order_by(Role.id)


def role_by_name(session: Session, name: str) -> Role:
    role = session.scalar(select(Role).where(Role.name == name))
    if role is None:
        raise NotFound(gettext("No role %(name)s.", name=name))
    return role


def get_role(session: Session, role_id: int) -> Role:
    role = session.get(Role, role_id)
    if role is None:
        raise NotFound(gettext("No such role."))
    return role


def _permissions(names: list[str]) -> list[str]:
    known = {p.value for p in GRANTABLE}
    unknown = sorted(set(names) - known)
    if unknown:
        raise ValidationFailed(
            {
                "permissions": [
                    gettext(
                        "These permissions are unknown or cannot be given by a role: %(names)s.",
                        names=", ".join(unknown),
                    )
                ]
            }
        )
    return sorted(set(names))


def ensure_builtin(session: Session) -> None:
    """Create the built-in roles that are missing (first start, or after an upgrade)."""
    have = set(session.scalars(select(Role.name)))
    for name, (description, perms) in BUILTIN_ROLES.items():
        if name not in have:
            session.add(
                Role(name=name, description=description, permissions=sorted(perms), builtin=True)
            )
    session.commit()


def create_role(session: Session, access: Access, data: Mapping[str, Any]) -> Role:
    access.require_platform_admin()
    if session.scalar(select(Role.id).where(Role.name == data["name"])):
        raise Conflict(gettext("The role %(name)s exists already.", name=data["name"]))
    role = Role(
        name=data["name"],
        description=data.get("description", ""),
        permissions=_permissions(data["permissions"]),
    )
    session.add(role)
    session.flush()
    record(session, access.user, "role.create", "role", role.id, after=role.audit_view())
    session.commit()
    return role


def editable_role(session: Session, access: Access, role_id: int) -> Role:
    """A role as a platform admin is about to change or delete it: what an update's version
    is checked against before anything changes."""
    access.require_platform_admin()
    return get_role(session, role_id)


def update_role(session: Session, access: Access, role_id: int, data: Mapping[str, Any]) -> Role:
    access.require_platform_admin()
    role = get_role(session, role_id)
    if role.builtin:
        raise Conflict(gettext("Built-in roles cannot change."))
    before = role.audit_view()
    if "name" in data and data["name"] != role.name:
        if session.scalar(select(Role.id).where(Role.name == data["name"])):
            raise Conflict(gettext("The role %(name)s exists already.", name=data["name"]))
        role.name = data["name"]
    if "description" in data:
        role.description = data["description"]
    if "permissions" in data:
        role.permissions = _permissions(data["permissions"])
    record(
        session, access.user, "role.update", "role", role.id, before=before, after=role.audit_view()
    )
    session.commit()
    return role


def delete_role(session: Session, access: Access, role_id: int) -> None:
    access.require_platform_admin()
    role = get_role(session, role_id)
    if role.builtin:
        raise Conflict(gettext("Built-in roles cannot be deleted."))
    used = session.scalar(select(Membership.id).where(Membership.role_id == role.id).limit(1))
    used = used or session.scalar(
        select(GroupGrant.id).where(GroupGrant.role_id == role.id).limit(1)
    )
    if used:
        raise Conflict(
            gettext("Members or groups still hold this role: give them another one first.")
        )
    record(session, access.user, "role.delete", "role", role.id, before=role.audit_view())
    session.delete(role)
    session.commit()
