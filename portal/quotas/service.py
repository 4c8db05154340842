"""Quotas of domains and projects, and their sync to Slurm accounts (preview and apply)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import current_app
from sqlalchemy import select
from sqlalchemy.orm import Session

from portal.audit.service import record
from portal.authz import Access, Perm
from portal.errors import DomainError, QuotaExceeded, SlurmUnavailable, ValidationFailed
from portal.i18n import gettext
from portal.quotas import drift
from portal.quotas.models import TRES
from portal.quotas.policy import install_policy
from portal.quotas.wanted import plan
from portal.quotas.words import column_heading
from portal.slurm import SlurmPort
from portal.tenancy.models import Domain, Project
from portal.tenancy.service import get_domain, get_project, retired_names
from slurm_plugins.client.errors import SlurmError
from slurm_plugins.client.models import Association


def _check_values(data: Mapping[str, Any]) -> dict[str, int | None]:
    errors = {
        k: [gettext("A whole number, 0 or more; null for no limit.")]
        for k, v in data.items()
        if k in TRES and v is not None and (not isinstance(v, int) or v < 0)
    }
    if errors:
        raise ValidationFailed(errors)
    return {k: v for k, v in data.items() if k in TRES}


def get_domain_quota(session: Session, access: Access, domain_id: int) -> Domain:
    return get_domain(session, access, domain_id, Perm.DOMAIN_READ)


def get_project_quota(session: Session, access: Access, project_id: int) -> Project:
    return get_project(session, access, project_id, Perm.QUOTA_READ)


def editable(
    session: Session, access: Access, owner: type[Domain] | type[Project], owner_id: int
) -> Domain | Project:
    """The domain or project whose quota the caller may set (as ``set_*_quota`` check it):
    what an update's version is checked against before anything changes."""
    if owner is Domain:
        domain = get_domain(session, access, owner_id, Perm.DOMAIN_READ)
        access.require_platform_admin()
        return domain
    return get_project(session, access, owner_id, Perm.QUOTA_MANAGE)


def set_domain_quota(
    session: Session,
    access: Access,
    domain_id: int,
    data: Mapping[str, Any],
    *,
    commit: bool = True,
) -> Domain:
    """Platform admins set a domain's limits; none may fall below a project's own limit."""
    domain = get_domain(session, access, domain_id, Perm.DOMAIN_READ)
    access.require_platform_admin()
    values = _check_values(data)
    projects = session.scalars(select(Project).where(Project.domain_id == domain.id)).all()
    over = [
        gettext(
            "%(project)s has %(amount)s %(what)s",
            project=p.name,
            amount=getattr(p, k),
            what=column_heading(k),
        )
        for k, v in values.items()
        if v is not None
        for p in projects
        if getattr(p, k) is not None and getattr(p, k) > v
    ]
    if over:
        raise QuotaExceeded(
            gettext(
                "Projects of the domain hold more than the new limit; lower theirs first: "
                "%(over)s.",
                over="; ".join(over),
            )
        )
    before = domain.quota()
    for k, v in values.items():
        setattr(domain, k, v)
    record(
        session,
        access.user,
        "quota.domain",
        "domain",
        domain.id,
        before=before,
        after=domain.quota(),
        domain_id=domain.id,
    )
    if commit:
        session.commit()
    return domain


def set_project_quota(
    session: Session,
    access: Access,
    project_id: int,
    data: Mapping[str, Any],
    *,
    commit: bool = True,
) -> Project:
    """Domain admins set a project's limits, each within its domain's limit."""
    project = get_project(session, access, project_id, Perm.QUOTA_MANAGE)
    values = _check_values(data)
    domain = project.domain
    over = [
        gettext(
            "%(what)s: more than the domain's limit of %(limit)s.",
            what=column_heading(k),
            limit=getattr(domain, k),
        )
        for k, v in values.items()
        if getattr(domain, k) is not None and (v is None or v > getattr(domain, k))
    ]
    if over:
        raise QuotaExceeded(" ".join(over))
    before = project.quota()
    for k, v in values.items():
        setattr(project, k, v)
    record(
        session,
        access.user,
        "quota.project",
        "project",
        project.id,
        before=before,
        after=project.quota(),
        domain_id=project.domain_id,
    )
    if commit:
        session.commit()
    return project


# ---------------------------------------------------------------------- Slurm sync
def sync(session: Session, access: Access, port: SlurmPort, *, apply: bool) -> dict[str, Any]:
    """The sacctmgr commands that bring Slurm to the portal's state, both ways (associations
    the portal no longer wants are removed); sent when ``apply``."""
    access.require_platform_admin()
    have = tuple(port.associations())
    planned = drift.diff(snapshot(session, have))
    if not apply:
        commands = planned.commands(have)
    else:
        commands = send(port, planned)
        record(
            session, access.user, "slurm.sync", "slurm", "accounts",
            after={"commands": commands, **drift.changes(planned)},
        )  # fmt: skip
        session.commit()
    return {
        "applied": apply,
        "commands": commands,
        "accounts": [a.name for a in planned.accounts],
        "users": [f"{u.name}@{u.account}" for u in planned.users],
    }


def snapshot(
    session: Session, have: tuple[Association, ...], domain: Domain | None = None
) -> drift.SyncSnapshot:
    return drift.SyncSnapshot(
        wanted=plan(session),
        have=have,
        domains=frozenset(session.scalars(select(Domain.name))),
        deleted=retired_names(session, "project"),
        domain=domain.name if domain is not None else None,
    )


def send(port: SlurmPort, planned: drift.SyncPlan) -> list[str]:
    """The plan's writes: accounts and associations the portal wants, then removals (each
    write re-reads Slurm and sends only what still differs)."""
    sent = port.apply(planned.accounts, planned.users) if planned.add else []
    if planned.remove_users or planned.remove_accounts:
        sent += port.remove(users=planned.remove_users, accounts=planned.remove_accounts)
    return sent


def save_and_enforce(  # noqa: PLR0917 - the owner's kind and id, then the limits
    session: Session,
    access: Access,
    port: SlurmPort,
    owner: type[Domain] | type[Project],
    owner_id: int,
    data: Mapping[str, Any],
    *,
    dry_run: bool = False,
) -> tuple[Domain | Project, dict[str, Any]]:
    """Save a domain's or project's quota and apply it to Slurm for that tenant at once, so
    a tenant admin needs no platform admin; ``dry_run`` shows the commands and saves nothing.

    The database commits only once Slurm took the commands: a quota is never shown as set
    while Slurm enforces another."""
    saved: Domain | Project
    if owner is Domain:
        saved = set_domain_quota(session, access, owner_id, data, commit=False)
        domain = saved
    else:
        saved = set_project_quota(session, access, owner_id, data, commit=False)
        domain = saved.domain
    session.flush()
    try:
        result = enforce(session, access, port, domain, dry_run=dry_run)
    except (SlurmError, DomainError):
        session.rollback()
        raise
    if dry_run:
        session.rollback()
    else:
        session.commit()
    return saved, result


def enforce(
    session: Session, access: Access, port: SlurmPort, domain: Domain, *, dry_run: bool
) -> dict[str, Any]:
    """The sacctmgr commands that bring one domain (its account, its projects' accounts and
    their submitters) to the portal's state, sent unless ``dry_run``; audited, and the
    admission hook's table re-rendered (its per-job limits) where the portal writes it."""
    have = tuple(port.associations())
    planned = drift.diff(snapshot(session, have, domain))
    if dry_run:
        return {"applied": False, "commands": planned.commands(have)}
    try:
        commands = send(port, planned)
    except SlurmError as exc:
        raise SlurmUnavailable(
            gettext("Slurm did not take the quota: %(why)s", why=str(exc))
        ) from exc
    record(
        session,
        access.user,
        "slurm.sync",
        "domain",
        domain.id,
        after={"commands": commands, **drift.changes(planned)},
        domain_id=domain.id,
    )
    if current_app.config.get("ADMISSION_DIR"):
        install_policy(session, access.user, apply=True, commit=False)
    return {"applied": True, "commands": commands}


def enforce_project(session: Session, access: Access, port: SlurmPort, project_id: int) -> None:
    """After a membership change: the project's domain brought to Slurm at once, committed."""
    project = session.get(Project, project_id)
    if project is None:
        return
    enforce(session, access, port, project.domain, dry_run=False)
    session.commit()


def enforce_domain(session: Session, access: Access, port: SlurmPort, domain_id: int) -> None:
    """After a project is deleted: its domain brought to Slurm (the project's account and its
    associations removed), committed."""
    domain = session.get(Domain, domain_id)
    if domain is None:
        return
    enforce(session, access, port, domain, dry_run=False)
    session.commit()
