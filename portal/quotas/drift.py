"""Drift between the portal's tenants and Slurm's associations, both ways (pure).

:func:`diff` takes a frozen snapshot (what the portal wants, what Slurm holds) and returns a
:class:`SyncPlan`: the accounts and user associations to add or change (a member the portal
has and Slurm lacks) and those to remove (an association Slurm holds that the portal does not
want: a member removed, a role that may no longer submit, a user deactivated, a project
deleted). Applying it is :mod:`portal.quotas.slurmsync`'s.

Only accounts the portal manages are looked at: its domains' accounts, its projects' accounts,
and the accounts of projects it deleted (named by the audit log) that Slurm still holds under a
domain's account. The ``root`` account, any other account (a site's own, another portal's
under a domain of the same name) and the users in ``keep_users`` (root) are never touched, so
what the site made outside the portal stays as the site made it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from portal.quotas.render import SlurmPlan
from slurm_plugins.client import accounts as account_diff
from slurm_plugins.client.models import Association
from slurm_plugins.client.specs import AccountSpec, UserSpec

ROOT_ACCOUNT = "root"


@dataclass(frozen=True, slots=True)
class SyncSnapshot:
    wanted: SlurmPlan
    have: tuple[Association, ...]
    domains: frozenset[str]  # the portal's domains: the roots of what it manages
    deleted: frozenset[str] = frozenset()  # projects the portal deleted (its audit log)
    keep_users: frozenset[str] = frozenset({"root"})
    #: one domain's accounts only (a membership change); None: everything the portal manages
    domain: str | None = None


@dataclass(frozen=True, slots=True)
class SyncPlan:
    accounts: tuple[AccountSpec, ...]  # the portal's accounts in scope, as it wants them
    users: tuple[UserSpec, ...]  # the portal's submitters in scope
    add: tuple[str, ...]  # sacctmgr commands adding or changing accounts and associations
    added_users: tuple[tuple[str, str], ...]  # (user, account) the portal has, Slurm lacks
    remove_users: tuple[tuple[str, str], ...]  # (user, account) Slurm has, the portal not
    remove_accounts: tuple[str, ...]  # project accounts no project names any more

    @property
    def empty(self) -> bool:
        return not (self.add or self.remove_users or self.remove_accounts)

    def commands(self, have: Sequence[Association]) -> list[str]:
        """Every sacctmgr command, additions first (they never depend on a removal)."""
        removals = account_diff.removal_commands(
            have, users=self.remove_users, accounts=self.remove_accounts
        )
        return [*self.add, *removals]

    def lines(self) -> list[str]:
        """What changes, one line each, for the daemon's log and the audit record."""
        out = [
            f"slurm: add {u} to account {a} (a member in the portal)" for u, a in self.added_users
        ]
        out += [
            f"slurm: remove {u} from account {a} (not a member who may submit in the portal)"
            for u, a in self.remove_users
        ]
        out += [
            f"slurm: remove account {a} (no such project in the portal)"
            for a in self.remove_accounts
        ]
        return out


def changes(planned: SyncPlan) -> dict[str, list[str]]:
    """What a plan adds and removes, as the audit log records it."""
    return {
        "added": [f"{u}@{a}" for u, a in planned.added_users],
        "removed": [f"{u}@{a}" for u, a in planned.remove_users],
        "removed_accounts": list(planned.remove_accounts),
    }


def managed(snap: SyncSnapshot) -> frozenset[str]:
    """The accounts in scope: the portal's domains and projects, and the accounts of projects
    it deleted still under a domain's account; never ``root``."""
    wanted = {spec.name: spec.parent for spec in snap.wanted.accounts}
    held = {a.account: a.parent for a in snap.have if not a.user}
    names = set(wanted) | {
        name for name, parent in held.items() if parent in snap.domains and name in snap.deleted
    }
    if snap.domain is not None:
        names = {n for n in names if n == snap.domain or wanted.get(n, held.get(n)) == snap.domain}
    names.discard(ROOT_ACCOUNT)
    return frozenset(names)


def diff(snap: SyncSnapshot) -> SyncPlan:
    scope = managed(snap)
    wanted_names = {spec.name for spec in snap.wanted.accounts}
    accounts = [spec for spec in snap.wanted.accounts if spec.name in scope]
    users = [spec for spec in snap.wanted.users if spec.account in scope]
    wanted_pairs = {(spec.name, spec.account) for spec in users}
    have_pairs = {(a.user, a.account) for a in snap.have if a.user}
    add = account_diff.account_commands(snap.have, accounts) + account_diff.user_commands(
        snap.have, users
    )
    remove_users = sorted(
        (user, account)
        for user, account in have_pairs
        if account in scope and user not in snap.keep_users and (user, account) not in wanted_pairs
    )
    remove_accounts = sorted(
        a.account
        for a in snap.have
        if not a.user and a.account in scope and a.account not in wanted_names
    )
    return SyncPlan(
        accounts=tuple(accounts),
        users=tuple(users),
        add=tuple(add),
        added_users=tuple(sorted(wanted_pairs - have_pairs, key=lambda p: (p[1], p[0]))),
        remove_users=tuple(remove_users),
        remove_accounts=tuple(dict.fromkeys(remove_accounts)),
    )
