"""Pure rendering of the portal's tenants into Slurm accounts and user associations.

Domains become accounts under ``root``, projects accounts under their domain; a project's
quota is its account's ``GrpTRES``. Every user who may submit jobs in a project (directly or
through a group) gets an association with the project's account and QOS.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter

from slurm_plugins.client.specs import AccountSpec, UserSpec


@dataclass(frozen=True, slots=True)
class AccountRow:
    name: str
    parent: str  # "root" for domains
    description: str
    grp_tres: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SubmitterRow:
    username: str
    account: str
    qos: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SlurmPlan:
    accounts: tuple[AccountSpec, ...]
    users: tuple[UserSpec, ...]


def slurm_text(text: str) -> str:
    """Free text as Slurm can store it: its line parser takes no quotes or control characters
    in a value, so those become spaces (the portal keeps the text as written)."""
    kept = "".join(" " if c in "\"'" or ord(c) < 32 or 127 <= ord(c) < 160 else c for c in text)
    return " ".join(kept.split())


def render(accounts: Iterable[AccountRow], submitters: Iterable[SubmitterRow]) -> SlurmPlan:
    """Parents before children, both sorted by name, so the plan is stable."""
    rows = sorted(accounts, key=lambda a: (a.parent != "root", a.parent, a.name))
    specs = tuple(
        AccountSpec(
            a.name,
            parent=a.parent,
            description=slurm_text(a.description),
            grp_tres=dict(sorted(a.grp_tres.items())),
        )
        for a in rows
    )
    sorted_qos: dict[tuple[str, ...], tuple[str, ...]] = {}  # one per project, not per user
    users = tuple(
        UserSpec(
            s.username,
            s.account,
            qos=sorted_qos.setdefault(s.qos, tuple(sorted(s.qos))),
            default_qos=s.qos[0],
        )
        for s in sorted(set(submitters), key=attrgetter("account", "username"))
        if s.qos
    )
    return SlurmPlan(specs, users)
