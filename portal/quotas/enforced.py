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
from dataclasses import dataclass
from pathlib import Path

from flask import current_app
from sqlalchemy.orm import Session

from gres.naming import DEFAULT_SHARDS_PER_GPU
from plumbing.errors import ConfigError
from portal.quotas.policy import base_policy, portal_policy
from portal.quotas.summary import TenantRow, summarise
from portal.tenancy.models import Project
from slurm_plugins.admission.config import PolicyError
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


def _per_job(session: Session) -> tuple[dict[str, TenantRow], int] | None:
    if not current_app.config.get("ADMISSION_DIR"):
        return None
    try:
        summary = summarise(portal_policy(session, base_policy()))
    except PolicyError as exc:  # the admins' policy page says what does not hold together
        log.warning("quotas: the admission policy does not render: %s", "; ".join(exc.messages))
        return None
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


def enforced(session: Session, projects: Iterable[Project]) -> EnforcedView:
    """What applies to each of ``projects`` (those the reader may see the quota of)."""
    hook = _per_job(session)
    rows, spg = hook if hook is not None else ({}, DEFAULT_SHARDS_PER_GPU)
    given = _guarantees()
    return EnforcedView(
        projects={p.id: Enforced(rows.get(p.name), (given or {}).get(p.name)) for p in projects},
        shards_per_gpu=spg,
        per_job=hook is not None,
        guarantees=bool(given),
    )
