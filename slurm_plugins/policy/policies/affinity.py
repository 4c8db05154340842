"""``affinity``: jobs of one anti-affinity group never share a node.

Members carry ``anti_affinity=<group>`` in their AIPool comment; a group is the name within
one account. A pending member gets every node another member runs on added to its
``ExcNodeList`` (its own ``--exclude`` stays). Pending members start one at a time: the next
is held until the one before it runs, so two of them can never be placed together. Members
of a gang must start at once; they are given distinct nodes in the scratch view instead.
Members that started together before the daemon saw them are pulled apart: the newest is
requeued while younger than ``fix_within``.

Affinity in the other direction — features (``--constraint``), partitions and node lists —
is Slurm's own and is honoured by the scratch view when it looks for room.
Members are best submitted held (AIPool's job specs do): the daemon then releases each one
with its exclusions already set.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from marshmallow import Schema, fields, validate

from slurm_plugins.policy.base import Context, Cycle, Policy, Verdict, hold, register
from slurm_plugins.policy.plan import Action, JobAction
from slurm_plugins.policy.resources import hostlist
from slurm_plugins.policy.snapshot import JobInfo


class AffinityArgs(Schema):
    label = fields.String(load_default="anti_affinity")
    scope = fields.String(
        load_default="account", validate=validate.OneOf(["account", "user", "all"])
    )


@register
class AntiAffinity(Policy):
    name = "affinity"
    Args = AffinityArgs

    def __init__(
        self,
        *,
        label: str = "anti_affinity",
        scope: str = "account",
        fix_within: float = 300,
        **args: Any,
    ) -> None:
        super().__init__(**args)
        self.label = label
        self.scope = scope
        self.fix_within = fix_within
        self._cache: tuple[Context, dict[tuple[str, str], list[JobInfo]]] | None = None

    def key(self, job: JobInfo) -> tuple[str, str] | None:
        group = job.labels.get(self.label)
        if not group:
            return None
        owner = {"account": job.account, "user": job.user, "all": ""}[self.scope]
        return owner, group

    def groups(self, ctx: Context) -> dict[tuple[str, str], list[JobInfo]]:
        if self._cache is not None and self._cache[0] is ctx:
            return self._cache[1]
        out: dict[tuple[str, str], list[JobInfo]] = {}
        for j in ctx.snapshot.jobs:
            k = self.key(j)
            if k is not None and (j.running or j.pending):
                out.setdefault(k, []).append(j)
        self._cache = (ctx, out)
        return out

    def admit(self, job: JobInfo, ctx: Context, cycle: Cycle) -> Verdict | None:
        k = self.key(job)
        if k is None:
            return None
        members = self.groups(ctx)[k]
        if "gang" in job.labels:  # a gang starts at once: spread its members in one go
            memo = f"affinity:{k}"
            if memo not in cycle.memo:
                cycle.memo[memo] = self._spread(members, ctx, cycle)
            where: dict[int, tuple[str, ...]] = cycle.memo[memo]
        else:
            # one pending member at a time: the next waits until this one runs, so its
            # exclusions name real nodes, not guesses that change from cycle to cycle
            first = cycle.memo.setdefault(f"affinity-first:{k}", job.job_id)
            if first != job.job_id:
                return hold(f"anti-affinity {k[1]}: waiting for member {first} to start first")
            where = {m.job_id: m.nodes for m in members if m.running}
        others = {n for m, nodes in where.items() if m != job.job_id for n in nodes}
        if not others:
            return None
        whom = sorted(m for m, nodes in where.items() if m != job.job_id and nodes)
        members_on = ", ".join(map(str, whom))
        return Verdict(
            reason=f"anti-affinity {k[1]}: kept off {hostlist(others)} (members {members_on})",
            exclude=frozenset(others),
        )

    def victims(self, ctx: Context, cycle: Cycle) -> Iterable[JobAction]:
        """Members that started on one node all the same (submitted unheld, started before
        the daemon saw them): the newest moves, while it is young enough to lose little."""
        out = []
        for k, members in self.groups(ctx).items():
            seen: dict[str, JobInfo] = {}
            for m in sorted(
                (m for m in members if m.running), key=lambda m: (m.start or 0, m.job_id)
            ):
                clash = next((seen[n] for n in m.nodes if n in seen), None)
                for n in m.nodes:
                    seen.setdefault(n, m)
                young = m.start is not None and ctx.now - m.start <= self.fix_within
                if clash is None or not young or not m.requeue or not ctx.select.matches(m):
                    continue
                out.append(
                    JobAction(
                        m.job_id,
                        Action.REQUEUE,
                        f"anti-affinity {k[1]}: shares {hostlist(set(m.nodes) & set(clash.nodes))} "
                        f"with member {clash.job_id}; requeued to run apart",
                        policy=self.name,
                    )
                )
        return out

    def _spread(
        self, members: list[JobInfo], ctx: Context, cycle: Cycle
    ) -> dict[int, tuple[str, ...]]:
        """Nodes of running members, and distinct reserved nodes for pending ones that fit."""
        where = {m.job_id: m.nodes for m in members if m.running}
        taken = {n for nodes in where.values() for n in nodes}
        for m in sorted((m for m in members if m.pending), key=lambda m: (m.submit, m.job_id)):
            excl = taken | cycle.exclude.get(m.job_id, frozenset())
            if m.job_id in cycle.view.placed:
                nodes = cycle.view.placed[m.job_id]
            elif m.not_yet:
                continue
            else:
                found = cycle.view.place(m, exclude=excl, choose=cycle.chooser)
                if found is None:
                    continue
                nodes = found
            where[m.job_id] = nodes
            taken |= set(nodes)
        return where
