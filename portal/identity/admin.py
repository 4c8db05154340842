"""Managing users: platform admins everywhere, domain admins within their own domains.

A domain admin creates a user into a project of their domain: the user is its member from the
start, and the domain is the account's home. A domain admin resets, deactivates or edits a
user only if the account's home is one of their domains, everything the user belongs to —
project memberships, groups, domain admin rights — lies in domains they administer, and the
user is no platform admin. A user who also belongs elsewhere is the other domain's business
too, and an account made elsewhere (or by a platform admin without a project) is not theirs
even when they add it to a project of theirs: adding someone to a project must not hand over
their password. Only a platform admin changes those accounts.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from portal.audit.service import record
from portal.authz import Access, Perm
from portal.errors import Conflict, Forbidden, ValidationFailed
from portal.i18n import gettext
from portal.identity.models import User
from portal.identity.service import (
    USERNAME,
    check_password_rules,
    end_sessions,
    get_user,
    hash_password,
    password_inputs,
    set_password,
)
from portal.roles.models import Role
from portal.tenancy.models import (
    Domain,
    DomainAdmin,
    Group,
    GroupMember,
    Membership,
    Project,
)
from portal.tenancy.service import get_project
from translations import N_

DEFAULT_ROLE = "member"  # the role a new user gets in their first project unless told
USERNAME_RULE = N_(
    "A Unix user name: a lower-case letter or _, then up to 31 lower-case letters, digits, _ or -."
)


def _require_some_admin(access: Access) -> None:
    if not access.platform_admin and not access.admin_of:
        raise Forbidden(gettext("Only platform admins and domain admins manage users."))


def user_domains(session: Session, user_id: int) -> frozenset[int]:
    """Every domain the user belongs to: through a project, a group, or as its admin."""
    projects = select(Project.domain_id).join(Membership, Membership.project_id == Project.id)
    groups = select(Group.domain_id).join(GroupMember, GroupMember.group_id == Group.id)
    found: set[int] = set()
    found.update(session.scalars(projects.where(Membership.user_id == user_id)))
    found.update(session.scalars(groups.where(GroupMember.user_id == user_id)))
    found.update(
        session.scalars(select(DomainAdmin.domain_id).where(DomainAdmin.user_id == user_id))
    )
    return frozenset(found)


def may_manage(access: Access, user: User, domains: frozenset[int]) -> bool:
    """Whether the caller may reset, deactivate or edit ``user`` (who belongs to ``domains``)."""
    if access.platform_admin:
        return True
    return (
        not user.is_platform_admin
        and user.home_domain_id in access.admin_of
        and domains <= access.admin_of
    )


def manageable(session: Session, access: Access, user_id: int) -> User:
    """The user, if the caller may manage them (see the module); 403 otherwise, 404 for a
    user the caller cannot see at all."""
    _require_some_admin(access)
    user = get_user(session, access, user_id)
    if not may_manage(access, user, user_domains(session, user.id)):
        raise Forbidden(
            gettext(
                "%(name)s was not made in your domain, also belongs to other domains, or is "
                "a platform admin: only a platform admin may change this account.",
                name=user.username,
            )
        )
    return user


def _audit_domain(session: Session, user_id: int) -> int | None:
    """The domain a user's events belong to (so its admins read them): the user's only one."""
    domains = user_domains(session, user_id)
    return next(iter(domains)) if len(domains) == 1 else None


# ---------------------------------------------------------------------- creating
def _first_project(
    session: Session, access: Access, data: Mapping[str, Any]
) -> tuple[Project, Role] | None:
    """The project the new user joins, and their role in it; domain admins must name one of
    their domain."""
    project_id = data.get("project_id")
    if not project_id:
        if access.platform_admin:
            return None
        raise ValidationFailed(
            {"project_id": [gettext("Choose a project of your domain for the new user.")]}
        )
    project = get_project(session, access, project_id, Perm.MEMBERS_MANAGE)
    if not access.platform_admin and project.domain_id not in access.admin_of:
        raise Forbidden(gettext("Domain admins create users only in projects of their domain."))
    role_id = data.get("role_id")
    role = (
        session.get(Role, role_id)
        if role_id
        else session.scalar(select(Role).where(Role.name == DEFAULT_ROLE))
    )
    if role is None:
        raise ValidationFailed({"role_id": [gettext("No such role.")]})
    return project, role


def create_user(
    session: Session, access: Access, data: Mapping[str, Any], *, min_length: int
) -> tuple[User, str, Project | None]:
    """A new user, their (given or generated) password and the project they joined.

    Platform admins create anyone, a project optional; domain admins create users who are
    not platform admins, each the member of a project of their domain."""
    _require_some_admin(access)
    if data.get("is_platform_admin") and not access.platform_admin:
        raise Forbidden(gettext("Only platform admins create platform admins."))
    username = data["username"]
    if not USERNAME.fullmatch(username):
        raise ValidationFailed({"username": [gettext(USERNAME_RULE)]})
    first = _first_project(session, access, data)
    if session.scalar(select(User.id).where(User.username == username)) is not None:
        raise Conflict(gettext("The user %(name)s exists already.", name=username))
    password = data.get("password") or secrets.token_urlsafe(12)
    inputs = (username, data.get("display_name", ""), data.get("email", ""))
    check_password_rules(password, min_length, user_inputs=inputs)
    user = User(
        username=username,
        display_name=data.get("display_name") or "",
        email=data.get("email") or "",
        is_platform_admin=bool(data.get("is_platform_admin", False)),
        password_hash=hash_password(password),
        home_domain_id=first[0].domain_id if first else None,
    )
    session.add(user)
    session.flush()
    domain_id = first[0].domain_id if first else None
    record(
        session,
        access.user,
        "user.create",
        "user",
        user.id,
        after=user.audit_view(),
        domain_id=domain_id,
    )
    if first is not None:
        project, role = first
        member = Membership(project_id=project.id, user_id=user.id, role_id=role.id)
        session.add(member)
        session.flush()
        record(
            session,
            access.user,
            "member.add",
            "membership",
            member.id,
            after=member.audit_view(),
            domain_id=domain_id,
        )
    session.commit()
    return user, password, first[0] if first else None


# ---------------------------------------------------------------------- changing
def update_user(session: Session, access: Access, user_id: int, data: Mapping[str, Any]) -> User:
    """Users change their own name and e-mail; admins also (de)activate the users they may
    manage; only platform admins make or unmake platform admins."""
    own = user_id == access.user_id
    if own and not {"is_platform_admin", "active"} & set(data):
        user = get_user(session, access, user_id)
    elif "is_platform_admin" in data and not access.platform_admin:
        raise Forbidden(gettext("Only platform admins make or unmake platform admins."))
    elif not access.platform_admin and not access.admin_of:
        raise Forbidden(gettext("Only platform admins change other users or their roles."))
    else:
        user = manageable(session, access, user_id)
    if own and data.get("is_platform_admin") is False:
        raise Conflict(gettext("An admin cannot take away their own admin rights."))
    if own and data.get("active") is False:
        raise Conflict(gettext("You cannot deactivate your own account."))
    before = user.audit_view()
    for key in ("display_name", "email", "is_platform_admin", "active"):
        if key in data:
            setattr(user, key, data[key])
    if "active" in data and not data["active"]:
        end_sessions(session, user)
    record(
        session,
        access.user,
        "user.update",
        "user",
        user.id,
        before=before,
        after=user.audit_view(),
        domain_id=_audit_domain(session, user.id),
    )
    session.commit()
    return user


def reset_password(
    session: Session, access: Access, user_id: int, new: str | None, *, min_length: int
) -> str:
    """An admin sets (or generates) a user's password; returns it. Every session and API
    token of the user ends."""
    user = manageable(session, access, user_id)
    password = new or secrets.token_urlsafe(12)
    check_password_rules(password, min_length, user_inputs=password_inputs(user))
    set_password(session, user, password)
    record(
        session,
        access.user,
        "user.password_reset",
        "user",
        user.id,
        domain_id=_audit_domain(session, user.id),
    )
    session.commit()
    return password


# ---------------------------------------------------------------------- reading
@dataclass(frozen=True)
class Ties:
    """What a user belongs to, as far as the caller may see it."""

    memberships: list[tuple[Membership, Project]]
    groups: list[Group]
    admin_of: list[Domain]
    manageable: bool


def ties_of(session: Session, access: Access, user: User) -> Ties:
    """The user's memberships, groups and domains that the caller administers or may read
    the members of (another tenant's ties stay hidden)."""
    rows = session.execute(
        select(Membership, Project)
        .join(Project, Project.id == Membership.project_id)
        .where(Membership.user_id == user.id, access.project_filter())
        .order_by(Project.name)
    )
    memberships = [(m, p) for m, p in rows if Perm.MEMBERS_READ in access.on_project(p)]
    groups = select(Group).join(GroupMember, GroupMember.group_id == Group.id)
    groups = groups.where(GroupMember.user_id == user.id).order_by(Group.name)
    admins = select(Domain).join(DomainAdmin, DomainAdmin.domain_id == Domain.id)
    admins = admins.where(DomainAdmin.user_id == user.id).order_by(Domain.name)
    if not access.platform_admin:
        groups = groups.where(Group.domain_id.in_(access.admin_of))
        admins = admins.where(Domain.id.in_(access.admin_of))
    return Ties(
        memberships=memberships,
        groups=list(session.scalars(groups)),
        admin_of=list(session.scalars(admins)),
        manageable=may_manage(access, user, user_domains(session, user.id)),
    )


def creatable_in(session: Session, access: Access) -> list[Project]:
    """The projects the caller may create a user into."""
    stmt = select(Project).order_by(Project.name)
    if not access.platform_admin:
        stmt = stmt.where(Project.domain_id.in_(access.admin_of))
    return list(session.scalars(stmt))
