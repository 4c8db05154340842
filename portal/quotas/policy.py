"""The admission hook's policy table, rendered from the portal's tenants and quotas.

A base policy file (YAML, ``ADMISSION_POLICY``; the lab's by default) gives what the portal
does not hold: the cluster, its pools, per-tenant pools, shard sizes and time limits, and
the unrestricted operators. The portal gives the rest, replacing the file's tenants and
users: every project is a tenant (its domain, its account, priority classes from its QOS
list, per-job device limits no larger than its and its domain's quota), every active user
who may submit in a project a user of it. The result is checked by the same rules as a
policy file and installed with the same atomic writer as ``aipool policy render``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
from flask import current_app
from flask.cli import with_appcontext
from sqlalchemy import select
from sqlalchemy.orm import Session

from portal.audit.service import record
from portal.authz import Access
from portal.errors import Conflict, DomainError, ValidationFailed
from portal.i18n import gettext
from portal.identity.models import User as PortalUser
from portal.quotas.summary import summarise
from portal.quotas.wanted import plan
from portal.slurm import ClusterSlurm, SlurmError, slurm
from portal.tenancy.models import Domain, Project
from slurm_plugins.admission.config import (
    LAB_POLICY,
    Limits,
    PolicyConfig,
    PolicyError,
    PriorityClass,
    Tenant,
    User,
    check,
    load_policy,
)
from slurm_plugins.admission.render import TABLE_FILE, render_hook, write_files
from slurm_plugins.admission.table import build_table

CLASS_OF_QOS = {c.qos: c for c in PriorityClass}


def _smallest(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return min(known) if known else None


def _cards(owner: Project | Domain, shards_per_gpu: int) -> float | None:
    """A quota in whole-card shares: GPUs, or shards over the shards of a card."""
    shards = owner.shards / shards_per_gpu if owner.shards is not None else None
    return _smallest([owner.gpus, shards])


def tenant_of(project: Project, base: PolicyConfig) -> Tenant:
    """The hook's tenant of one project: ``base``'s pools, shard sizes and limits for it, its
    per-job cards no more than its and its domain's quota, priorities from its QOS list."""
    known = next((t for t in base.tenants if t.name == project.name), None)
    classes = tuple(dict.fromkeys(CLASS_OF_QOS[q] for q in project.qos_list() if q in CLASS_OF_QOS))
    classes = classes or (PriorityClass.MEDIUM, PriorityClass.LOW)
    spg = base.cluster.shards_per_gpu
    limits = known.limits if known else Limits()
    limits = replace(
        limits,
        gpus=_smallest([limits.gpus, _cards(project, spg), _cards(project.domain, spg)]),
        npus=_smallest([limits.npus, project.npus, project.domain.npus]),
    )
    return Tenant(
        name=project.name,
        domain=project.domain.name,
        account=project.name,
        pools=known.pools if known else (),
        classes=classes,
        default_class=classes[0],
        shard_sizes=known.shard_sizes if known else None,
        limits=limits,
    )


def portal_policy(session: Session, base: PolicyConfig) -> PolicyConfig:
    """``base`` with its tenants and users replaced by the portal's; raises
    :class:`PolicyError` naming what does not hold together."""
    projects = session.scalars(select(Project).order_by(Project.name)).all()
    tenants = {p.name: tenant_of(p, base) for p in projects}
    accounts: dict[str, list[str]] = defaultdict(list)
    for spec in plan(session).users:
        accounts[spec.name].append(spec.account)
    known_users = {u.name: u for u in base.users}
    users = [u for u in base.users if u.unrestricted and u.name not in accounts]
    for name, names in sorted(accounts.items()):
        before = known_users.get(name)
        if before is not None and before.unrestricted:
            users.append(before)
            continue
        tenant = before.tenant if before and before.tenant in names else sorted(names)[0]
        classes = before.classes if before else None
        if classes is not None and tenants[tenant].default_class not in classes:
            classes = None
        users.append(User(name, tenant, classes))
    cfg = replace(base, tenants=tuple(tenants.values()), users=tuple(users))
    problems = check(cfg)
    if problems:
        raise PolicyError(problems)
    return cfg


def base_policy() -> PolicyConfig:
    """The site's base admission policy (``ADMISSION_POLICY``; the lab's by default)."""
    path = current_app.config["ADMISSION_POLICY"] or LAB_POLICY
    try:
        return load_policy(Path(path))
    except PolicyError as exc:
        problems = "; ".join(exc.messages)
        raise Conflict(
            gettext(
                "The base admission policy %(path)s is invalid: %(problems)s",
                path=str(path),
                problems=problems,
            )
        ) from None


def _release() -> tuple[int, int] | None:
    """The Slurm release the hook runs in (what the policy leaves to it: shards across
    cards), or None where the portal does not reach a real cluster."""
    port = slurm()
    if not isinstance(port, ClusterSlurm):
        return None
    try:
        return port.client.release_tuple()
    except SlurmError:
        return None


def render_policy(session: Session, access: Access, *, apply: bool) -> dict[str, Any]:
    """Render job_submit.lua and its table from the portal; write them when ``apply``.

    Platform admins only. Unchanged files are left alone, so slurmctld reloads nothing."""
    access.require_platform_admin()
    return install_policy(session, access.user, apply=apply)


def install_policy(
    session: Session, actor: PortalUser | None, *, apply: bool, commit: bool = True
) -> dict[str, Any]:
    """:func:`render_policy` without the caller's check (the command line is the operator)."""
    out = current_app.config["ADMISSION_DIR"]
    if not out:
        raise Conflict(
            gettext(
                "ADMISSION_DIR is not set: the portal does not know where slurmctld reads "
                "its admission policy."
            )
        )
    try:
        cfg = portal_policy(session, base_policy())
    except PolicyError as exc:
        raise ValidationFailed({"policy": list(exc.messages)}) from None
    release = _release()
    files = render_hook(cfg, release=release)
    digest = build_table(cfg, release=release)["digest"]
    directory = Path(out)
    stale = [n for n, text in files.items() if _read(directory / n) != text]
    changed: list[str] = []
    if apply:
        try:
            directory.mkdir(parents=True, exist_ok=True)
            changed = write_files(files, directory)
        except OSError as exc:
            raise Conflict(
                gettext(
                    "The policy could not be written to %(directory)s: %(why)s",
                    directory=str(directory),
                    why=exc.strerror or str(exc),
                )
            ) from None
        record(
            session,
            actor,
            "slurm.policy",
            "slurm",
            "admission",
            after={"digest": digest, "changed": changed},
        )
        if commit:
            session.commit()
    return {
        "applied": apply,
        "directory": str(directory),
        "digest": digest,
        "stale": stale,
        "changed": changed,
        "tenants": [t.name for t in cfg.tenants],
        "users": [u.name for u in cfg.users],
        "table": files[TABLE_FILE],
        "summary": summarise(cfg),  # what the page shows above the table (not in the API)
    }


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


@click.command("render-policy")
@click.option("--dry-run", is_flag=True, help="Say what would change; write nothing.")
@with_appcontext
def render_command(dry_run: bool) -> None:
    """Install the admission hook's policy table rendered from the portal's tenants
    (``flask --app portal.app:create_app render-policy``), as the platform admin would."""
    from portal.web import session

    try:
        result = install_policy(session(), None, apply=not dry_run)
    except DomainError as exc:
        raise click.ClickException(exc.message) from None
    if dry_run:
        stale = ", ".join(result["stale"]) or "nothing (up to date)"
        click.echo(f"policy {result['digest']}: would write {stale} to {result['directory']}")
    else:
        wrote = ", ".join(result["changed"]) or "nothing (up to date)"
        click.echo(f"policy {result['digest']}: wrote {wrote} to {result['directory']}")
