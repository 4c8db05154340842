"""What Slurm should hold, read from the portal's database: the accounts of domains and projects
with their limits, and each project's submitters. The quota sync (:mod:`portal.quotas.service`)
and the admission hook's table (:mod:`portal.quotas.policy`) both start from it."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from portal.authz import Perm, perms_of
from portal.identity.models import User
from portal.quotas.render import AccountRow, SlurmPlan, SubmitterRow, render
from portal.roles.models import Role
from portal.tenancy.models import Domain, GroupGrant, GroupMember, Membership, Project


def plan(session: Session, domain: Domain | None = None) -> SlurmPlan:
    """What Slurm should hold for the whole portal (or one ``domain``: its account, its
    projects' and their submitters'), read from the database.

    Roles and projects are read once and looked up per row: with 10,000 users, decoding
    each membership's role permissions made the preview take seconds."""
    domains = session.scalars(select(Domain)).all() if domain is None else [domain]
    in_scope = (
        select(Project) if domain is None else select(Project).where(Project.domain_id == domain.id)
    )
    projects = session.scalars(in_scope).all()
    accounts = [AccountRow(d.name, "root", d.description or d.name, d.grp_tres()) for d in domains]
    accounts += [
        AccountRow(p.name, p.domain.name, p.description or p.name, p.grp_tres()) for p in projects
    ]
    account_of = {p.id: (p.name, p.qos_list()) for p in projects}
    submits = {
        role_id
        for role_id, names in session.execute(select(Role.id, Role.permissions))
        if Perm.JOBS_SUBMIT in perms_of(names)
    }
    direct = (
        select(Membership.project_id, User.username)
        .join(User, User.id == Membership.user_id)
        .where(User.active, Membership.role_id.in_(submits))
    )
    via_groups = (
        select(GroupGrant.project_id, User.username)
        .join(GroupMember, GroupMember.group_id == GroupGrant.group_id)
        .join(User, User.id == GroupMember.user_id)
        .where(User.active, GroupGrant.role_id.in_(submits))
    )
    if domain is not None:
        ids = list(account_of)
        direct = direct.where(Membership.project_id.in_(ids))
        via_groups = via_groups.where(GroupGrant.project_id.in_(ids))
    pairs = {(pid, name) for query in (direct, via_groups) for pid, name in session.execute(query)}
    submitters = [SubmitterRow(name, *account_of[pid]) for pid, name in pairs]
    return render(accounts, submitters)
