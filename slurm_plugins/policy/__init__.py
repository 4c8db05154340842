"""The policy daemon: snapshot → pure plan → apply, with policies as named plug-ins.

Policies (:mod:`slurm_plugins.policy.policies`) never touch Slurm; only
:mod:`slurm_plugins.policy.apply` and :mod:`slurm_plugins.policy.daemon` use the client.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


def reasons_for(job_id: int, state_dir: Path) -> list[str]:
    """Why the daemon last did what it did to ``job_id``, from its decision log in
    ``state_dir`` (what the portal and ``aipool job`` show); read lazily, so importing the
    package costs nothing."""
    from slurm_plugins.policy.state import reasons_for as read

    return read(job_id, Path(state_dir))


def decision_log(state_dir: Path) -> Path:
    """The decision log's file in ``state_dir`` (a reader may cache it while it is unchanged)."""
    from slurm_plugins.policy.state import REASONS

    return Path(state_dir) / REASONS


def decisions(state_dir: Path) -> dict[int, list[str]]:
    """Every job's latest reasons in the decision log, read once (a reader showing many jobs,
    or caching the log while its file is unchanged)."""
    from slurm_plugins.policy.state import ReasonLog

    out: dict[int, list[str]] = {}
    for key, entry in ReasonLog(Path(state_dir)).read().items():
        if key.isdigit() and isinstance(entry, dict):
            out[int(key)] = [str(r) for r in entry.get("reasons", [])]
    return out


@dataclass(frozen=True, slots=True)
class Guarantee:
    """What the capacity policy guarantees one tenant (Kueue's nominal quota and borrowing),
    per resource (``gpu``, ``npu`` in cards; ``cpu``; ``mem`` in MiB): within ``nominal`` its
    jobs are never held, and cards others borrowed are taken back for them; in a ``cohort`` it
    may use what the others leave idle, up to ``borrowing_limit`` more (a resource missing
    there: no cap); without a cohort, nothing beyond ``nominal``."""

    tenant: str
    cohort: str | None
    nominal: Mapping[str, float]
    borrowing_limit: Mapping[str, float]
    #: the Slurm accounts of the other tenants in its cohort, whose idle quota it may borrow
    lenders: tuple[str, ...] = ()


def guarantees(config: Path) -> dict[str, Guarantee]:
    """Each Slurm account's guarantee under the daemon's configuration file ``config``; none
    when it runs no ``capacity`` policy (then no tenant has one). Raises ``ConfigError``
    (:mod:`plumbing.errors`) for a file that does not load."""
    from slurm_plugins.policy.config import load_config
    from slurm_plugins.policy.snapshot import Tenant

    cfg = load_config(config)
    if not any(p.name == "capacity" for p in cfg.engine.policies):
        return {}

    def lenders(t: Tenant) -> tuple[str, ...]:
        if t.cohort is None:
            return ()
        others = (o for o in cfg.tenants if o.cohort == t.cohort and o.name != t.name)
        return tuple(sorted(a for o in others for a in o.all_accounts))

    return {
        account: Guarantee(t.name, t.cohort, dict(t.nominal), dict(t.borrowing_limit), lenders(t))
        for t in cfg.tenants
        for account in t.all_accounts
        if t.nominal
    }


__all__ = ["Guarantee", "decision_log", "decisions", "guarantees", "reasons_for"]
