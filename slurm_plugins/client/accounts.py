"""sacctmgr commands that bring QOS, accounts and users to a desired state (pure).

Each function diffs the desired specs against what Slurm reports and returns only the
commands that change something, in an order that satisfies Slurm's dependencies.
"""

from __future__ import annotations

from collections.abc import Sequence

from slurm_plugins.client.models import Association, Qos
from slurm_plugins.client.specs import AccountSpec, QosSpec, UserSpec
from slurm_plugins.client.wire import kv


def qos_commands(have_list: Sequence[Qos], specs: Sequence[QosSpec]) -> list[str]:
    """All missing QOS are created first, so ``Preempt=`` can name any of them."""
    have = {q.name: q for q in have_list}
    missing = [s.name for s in specs if s.name not in have]
    adds = [f"add qos {','.join(missing)}"] if missing else []
    mods = [
        f"modify qos where name={spec.name} set {kv(spec.attributes(have.get(spec.name)))}"
        for spec in specs
        if spec.name not in have or not spec.matches(have[spec.name])
    ]
    return adds + mods


def account_commands(assocs: Sequence[Association], specs: Sequence[AccountSpec]) -> list[str]:
    """Parents come before their children (specs list parents first, or they exist)."""
    have = {a.account: a for a in assocs if not a.user}
    lines = []
    for spec in specs:
        cur = have.get(spec.name)
        if cur is None:
            lines.append(f"add account {spec.name} {kv(spec.attributes(new=True))}")
        elif not spec.matches(cur):
            attrs = spec.attributes(new=False, previous=cur)
            lines.append(f"modify account where name={spec.name} set {kv(attrs)}")
    return lines


def user_commands(assocs: Sequence[Association], specs: Sequence[UserSpec]) -> list[str]:
    have = {(a.user, a.account): a for a in assocs if a.user}
    lines = []
    for spec in specs:
        cur = have.get((spec.name, spec.account))
        if cur is None:
            lines.append(f"add user {spec.name} {kv(spec.attributes(new=True))}")
        elif not spec.matches(cur):
            lines.append(
                f"modify user where name={spec.name} account={spec.account} "
                f"set {kv(spec.attributes(new=False))}"
            )
    return lines


def removal_commands(
    assocs: Sequence[Association],
    *,
    users: Sequence[tuple[str, str]] = (),
    accounts: Sequence[str] = (),
) -> list[str]:
    """Delete user associations ``(user, account)`` first, then accounts, children first.

    Only what exists is deleted, so running it twice sends nothing the second time.
    """
    have_users = {(a.user, a.account) for a in assocs if a.user}
    parent = {a.account: a.parent for a in assocs if not a.user}
    lines = [f"delete user where name={u} account={a}" for u, a in users if (u, a) in have_users]

    def depth(name: str) -> int:
        d, seen = 0, set()
        while name in parent and parent[name] and name not in seen:
            seen.add(name)
            name, d = parent[name], d + 1
        return d

    doomed = sorted((a for a in set(accounts) if a in parent), key=lambda a: (-depth(a), a))
    lines += [f"delete account where name={a}" for a in doomed]
    return lines
