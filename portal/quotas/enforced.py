"""Every limit Slurm and AIPool's daemons apply to a project's jobs, for the people who read
its quota: the group limits (the project's quota, :mod:`portal.quotas.service`), what the
admission hook allows one job (from the same policy the portal installs for slurmctld,
:mod:`portal.quotas.policy`), and what the policy daemon guarantees the project and lets it
borrow (its ``capacity`` policy, read from its configuration file, ``POLICY_CONFIG``).

A part the site does not run is left out, not shown as "no limit": without ``ADMISSION_DIR``
the portal installs no admission policy, without ``POLICY_CONFIG`` (or with no ``capacity``
policy in it) nothing is guaranteed."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from flask import current_app

from gres.naming import DEFAULT_SHARDS_PER_GPU
from plumbing.errors import ConfigError
from portal.errors import DomainError
from portal.quotas.policy import base_policy, tenant_of
from portal.quotas.summary import TenantRow, summarise
from portal.tenancy.models import Project
from slurm_plugins.policy import Guarantee, guarantees

log = logging.getLogger("aipool.portal")


@dataclass(frozen=True, slots=True)
class Enforced:
    """What applies to one project's jobs beyond its group limits."""

    per_job: TenantRow | None  # None: the portal installs no admission policy
    guarantee: Guarantee | None  # None: nothing guaranteed (no capacity policy for it)


@dataclass(frozen=True, slots=True)
class EnforcedView:
    projects: dict[int, Enforced]
    shards_per_gpu: int
    per_job: bool  # the site's admission hook is the portal's
    guarantees: bool  # the site's policy daemon guarantees quotas


def _per_job(projects: list[Project]) -> tuple[dict[str, TenantRow], int] | None:
    """What the hook allows one job of each of ``projects``: each project's tenant as the
    portal renders it into the hook's table (:func:`portal.quotas.policy.tenant_of`), read
    for these projects only, not the whole policy."""
    if not current_app.config.get("ADMISSION_DIR"):
        return None
    try:
        base = base_policy()
    except DomainError as exc:  # the admins' policy page says what is wrong with the file
        log.warning("quotas: the base admission policy: %s", exc.message)
        return None
    cfg = replace(base, tenants=tuple(tenant_of(p, base) for p in projects), users=())
    summary = summarise(cfg)
    return {t.name: t for t in summary.tenants}, summary.shards_per_gpu


def _guarantees() -> dict[str, Guarantee] | None:
    path = current_app.config.get("POLICY_CONFIG")
    if not path:
        return None
    try:
        return guarantees(Path(path))
    except ConfigError as exc:
        log.warning("quotas: the policy daemon's configuration: %s", "; ".join(exc.messages))
        return None


def enforced(projects: Iterable[Project]) -> EnforcedView:
    """What applies to each of ``projects`` (those the reader may see the quota of)."""
    projects = list(projects)
    hook = _per_job(projects)
    rows, spg = hook if hook is not None else ({}, DEFAULT_SHARDS_PER_GPU)
    given = _guarantees()
    return EnforcedView(
        projects={p.id: Enforced(rows.get(p.name), (given or {}).get(p.name)) for p in projects},
        shards_per_gpu=spg,
        per_job=hook is not None,
        guarantees=bool(given),
    )
