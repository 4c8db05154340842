"""The one authorization module: who may do what, checked per object in the services.

Roles:

* **platform admin** (a flag on the user): everything.
* **domain admin** (a row per domain): manages the domain's projects, members, groups and
  project quotas; the domain's own quota is the platform admin's.
* **project roles** (built-in ``member``, ``manager``, ``viewer`` and custom ones): named sets
  of the project permissions below, given to a user directly (membership) or to a group.

Rule for reads across tenants: an object on which the caller holds no permission at all is
reported as *not found* (so foreign tenants' objects are invisible); one that the caller can
see but not change is *forbidden*.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from flask import g
from sqlalchemy import ColumnElement, false, or_, select
from sqlalchemy.orm import Session

from portal.errors import Forbidden, NotFound
from portal.i18n import gettext
from portal.identity.models import User
from portal.roles.models import Role
from portal.tenancy.models import DomainAdmin, GroupGrant, GroupMember, Membership, Project
from translations import N_


class Perm(StrEnum):
    PROJECT_READ = "project.read"
    PROJECT_MANAGE = "project.manage"
    MEMBERS_READ = "members.read"
    MEMBERS_MANAGE = "members.manage"
    QUOTA_READ = "quota.read"
    JOBS_SUBMIT = "jobs.submit"
    JOBS_READ_ALL = "jobs.read_all"
    JOBS_CANCEL_ALL = "jobs.cancel_all"
    # held through domain admin or platform admin only, never through a project role
    QUOTA_MANAGE = "quota.manage"
    DOMAIN_READ = "domain.read"
    DOMAIN_MANAGE = "domain.manage"


#: What each permission lets its holder do, in words (translated where shown).
MEANING: dict[Perm, str] = {
    Perm.PROJECT_READ: N_("See the project and its details"),
    Perm.PROJECT_MANAGE: N_("Change the project's description"),
    Perm.MEMBERS_READ: N_("See the project's members"),
    Perm.MEMBERS_MANAGE: N_("Add and remove members and change their roles"),
    Perm.QUOTA_READ: N_("See the project's quota"),
    Perm.JOBS_SUBMIT: N_("Submit jobs charged to the project"),
    Perm.JOBS_READ_ALL: N_("See every member's jobs in the project"),
    Perm.JOBS_CANCEL_ALL: N_("Cancel any member's jobs in the project"),
    Perm.QUOTA_MANAGE: N_("Set the project's quota and QOS"),
    Perm.DOMAIN_READ: N_("See the domain"),
    Perm.DOMAIN_MANAGE: N_("Manage the domain's projects, groups and admins"),
}
ALL = frozenset(Perm)
GRANTABLE = frozenset(
    {
        Perm.PROJECT_READ,
        Perm.PROJECT_MANAGE,
        Perm.MEMBERS_READ,
        Perm.MEMBERS_MANAGE,
        Perm.QUOTA_READ,
        Perm.JOBS_SUBMIT,
        Perm.JOBS_READ_ALL,
        Perm.JOBS_CANCEL_ALL,
    }
)
DOMAIN_ADMIN_ON_PROJECTS = GRANTABLE | {Perm.QUOTA_MANAGE}
MEMBER = frozenset({Perm.PROJECT_READ, Perm.MEMBERS_READ, Perm.QUOTA_READ, Perm.JOBS_SUBMIT})
BUILTIN_ROLES: dict[str, tuple[str, frozenset[Perm]]] = {
    "member": (N_("Runs jobs in the project"), MEMBER),
    "manager": (N_("Manages the project's members and jobs"), GRANTABLE),
    "viewer": (
        N_("Sees the project, its quota and its jobs"),
        frozenset({Perm.PROJECT_READ, Perm.QUOTA_READ, Perm.JOBS_READ_ALL}),
    ),
}


def perms_of(names: Iterable[str]) -> frozenset[Perm]:
    """Permissions named in a stored role (unknown names, e.g. from a newer version, drop)."""
    known = {p.value for p in GRANTABLE}
    return frozenset(Perm(n) for n in names if n in known)


@dataclass(frozen=True)
class Access:
    """What one user may do; built once per request by :func:`access_for`."""

    user: User
    platform_admin: bool = False
    admin_of: frozenset[int] = frozenset()  # domain ids
    grants: Mapping[int, frozenset[Perm]] = field(default_factory=dict)  # project id -> perms
    member_domains: frozenset[int] = frozenset()  # domains of the granted projects

    @property
    def user_id(self) -> int:
        return self.user.id

    @property
    def username(self) -> str:
        return self.user.username

    # ------------------------------------------------------------------ queries
    def on_project(self, project: Project) -> frozenset[Perm]:
        if self.platform_admin:
            return ALL
        if project.domain_id in self.admin_of:
            return DOMAIN_ADMIN_ON_PROJECTS
        return self.grants.get(project.id, frozenset())

    def on_domain(self, domain_id: int) -> frozenset[Perm]:
        if self.platform_admin:
            return ALL
        if domain_id in self.admin_of:
            return frozenset({Perm.DOMAIN_READ, Perm.DOMAIN_MANAGE})
        if domain_id in self.member_domains:
            return frozenset({Perm.DOMAIN_READ})
        return frozenset()

    def project_filter(self) -> ColumnElement[bool]:
        """SQL condition on :class:`Project` rows the caller can see."""
        if self.platform_admin:
            return Project.id.is_not(None)
        conds: list[ColumnElement[bool]] = []
        if self.admin_of:
            conds.append(Project.domain_id.in_(self.admin_of))
        if self.grants:
            conds.append(Project.id.in_(self.grants))
        return or_(*conds) if conds else false()

    def domain_ids(self) -> frozenset[int] | None:
        """Domains the caller can see; ``None`` for all."""
        return None if self.platform_admin else self.admin_of | self.member_domains

    # ------------------------------------------------------------------ checks
    def require_project(self, project: Project | None, perm: Perm) -> Project:
        if project is None or not self.on_project(project):
            raise NotFound(gettext("No such project."))
        if perm not in self.on_project(project):
            raise Forbidden(
                gettext(
                    "You may not do this in the project %(project)s: it needs the permission "
                    "“%(permission)s”.",
                    project=project.name,
                    permission=gettext(MEANING[perm]),
                )
            )
        return project

    def require_domain(self, domain_id: int | None, perm: Perm, what: str = "domain") -> int:
        if domain_id is None or not self.on_domain(domain_id):
            missing = (
                gettext("No such project.") if what == "project" else gettext("No such domain.")
            )
            raise NotFound(missing)
        if perm not in self.on_domain(domain_id):
            raise Forbidden(gettext("Only the domain's admins may do this."))
        return domain_id

    def require_platform_admin(self) -> None:
        if not self.platform_admin:
            raise Forbidden(gettext("Only platform admins may do this."))


def load_access(session: Session, user: User) -> Access:
    if user.is_platform_admin:
        return Access(user, platform_admin=True)
    grants: dict[int, set[Perm]] = defaultdict(set)
    domains: set[int] = set()
    direct = (
        select(Membership.project_id, Project.domain_id, Role.permissions)
        .join(Role, Role.id == Membership.role_id)
        .join(Project, Project.id == Membership.project_id)
        .where(Membership.user_id == user.id)
    )
    via_groups = (
        select(GroupGrant.project_id, Project.domain_id, Role.permissions)
        .join(GroupMember, GroupMember.group_id == GroupGrant.group_id)
        .join(Role, Role.id == GroupGrant.role_id)
        .join(Project, Project.id == GroupGrant.project_id)
        .where(GroupMember.user_id == user.id)
    )
    for query in (direct, via_groups):
        for project_id, domain_id, names in session.execute(query):
            grants[project_id] |= perms_of(names)
            domains.add(domain_id)
    admin_of = session.scalars(
        select(DomainAdmin.domain_id).where(DomainAdmin.user_id == user.id)
    ).all()
    return Access(
        user,
        admin_of=frozenset(admin_of),
        grants={k: frozenset(v) for k, v in grants.items() if v},
        member_domains=frozenset(domains),
    )


def access_for(session: Session, user: User) -> Access:
    """The caller's access, computed once per request."""
    cached: Access | None = g.get("aipool_access")
    if cached is None or cached.user_id != user.id:
        cached = load_access(session, user)
        g.aipool_access = cached
    return cached


def forget() -> None:
    """Drop the cached access (after a write that changes the caller's own grants)."""
    g.pop("aipool_access", None)
