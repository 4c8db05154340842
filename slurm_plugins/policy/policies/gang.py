"""``gang``: jobs of one group start all together or not at all.

Members carry the labels ``gang=<name>`` and ``gang_size=<n>`` in their AIPool comment
(``aipool:…,gang=exp1,gang_size=3``); a group is the name within one user. Members are
held (submitted held, or held by us when first seen) until all ``n`` are queued and all of
them fit on the free resources at once — checked by reserving each member in the cycle's
scratch view — then released together in one ``scontrol release``.

Should Slurm still start only part of a released group (another job took the room first),
the running members are requeued held after ``start_timeout`` and the group tries again:
a partial start never lasts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from marshmallow import Schema, fields

from plumbing.fields import Duration
from slurm_plugins.policy.base import Context, Cycle, Policy, Verdict, admit, hold, register
from slurm_plugins.policy.plan import Action, JobAction
from slurm_plugins.policy.snapshot import JobInfo

_NOT_NOW = ("BeginTime", "Dependency", "DependencyNeverSatisfied", "PartitionDown")


class GangArgs(Schema):
    label = fields.String(load_default="gang")
    size_label = fields.String(load_default="gang_size")
    start_timeout = Duration(load_default=120)


@dataclass(frozen=True, slots=True)
class Group:
    key: tuple[str, str]
    size: int
    members: tuple[JobInfo, ...]

    @property
    def pending(self) -> list[JobInfo]:
        return [j for j in self.members if j.pending]

    @property
    def running(self) -> list[JobInfo]:
        return [j for j in self.members if j.running]

    @property
    def name(self) -> str:
        return self.key[1]


def not_eligible(job: JobInfo) -> bool:
    """Waiting for a dependency or a begin time. A held job shows its hold as the reason,
    so its dependency string is read too (``afterok:53(unfulfilled)``)."""
    return any(r in job.reason for r in _NOT_NOW) or "unfulfilled" in job.dependency


@register
class Gang(Policy):
    name = "gang"
    Args = GangArgs

    def __init__(
        self,
        *,
        label: str = "gang",
        size_label: str = "gang_size",
        start_timeout: float = 120,
        **args: Any,
    ) -> None:
        super().__init__(**args)
        self.label = label
        self.size_label = size_label
        self.timeout = start_timeout
        self._cache: tuple[Context, dict[tuple[str, str], Group]] | None = None

    def groups(self, ctx: Context) -> dict[tuple[str, str], Group]:
        if self._cache is not None and self._cache[0] is ctx:
            return self._cache[1]
        members: dict[tuple[str, str], list[JobInfo]] = {}
        sizes: dict[tuple[str, str], int] = {}
        for j in ctx.snapshot.jobs:
            name = j.labels.get(self.label)
            if not name or not (j.pending or j.running):
                continue
            key = (j.user, name)
            members.setdefault(key, []).append(j)
            size = j.labels.get(self.size_label, "")
            if size.isdigit():
                sizes[key] = max(sizes.get(key, 0), int(size))
        out = {
            k: Group(k, sizes.get(k, len(v)), tuple(sorted(v, key=lambda j: j.job_id)))
            for k, v in members.items()
        }
        self._cache = (ctx, out)
        return out

    def group_of(self, job: JobInfo, ctx: Context) -> Group | None:
        name = job.labels.get(self.label)
        return self.groups(ctx).get((job.user, name)) if name else None

    def _partial_since(self, g: Group, ctx: Context) -> float | None:
        """When a partly started group was released, if it is partly started now."""
        if not (g.running and g.pending):
            return None
        released = ctx.state.released
        marks = [released[j.job_id].since for j in g.members if j.job_id in released]
        starts = [j.start for j in g.running if j.start is not None]
        return min(marks or starts or [ctx.now])

    def admit(self, job: JobInfo, ctx: Context, cycle: Cycle) -> Verdict | None:
        g = self.group_of(job, ctx)
        if g is None:
            return None
        key = f"gang:{g.key}"
        if key not in cycle.memo:
            cycle.memo[key] = self._decide(g, ctx, cycle)
        verdict: Verdict = cycle.memo[key]
        return verdict

    def _decide(self, g: Group, ctx: Context, cycle: Cycle) -> Verdict:
        tag = f"gang {g.name}"
        since = self._partial_since(g, ctx)
        if since is not None:
            if ctx.now - since >= self.timeout:
                return hold(
                    f"{tag}: only {len(g.running)} of {g.size} started; restarting the group"
                )
            cycle.wake.append(since + self.timeout)
            return admit(f"{tag}: {len(g.running)} of {g.size} running, the rest released")
        if g.running:
            return admit(f"{tag}: all {len(g.running)} members running")
        if len(g.members) < g.size:
            return hold(f"{tag}: {len(g.members)} of {g.size} members queued")
        blocked = [j for j in g.pending if not_eligible(j)]
        if blocked:
            why = blocked[0].reason if blocked[0].reason in _NOT_NOW else "Dependency"
            return hold(f"{tag}: member {blocked[0].job_id} is not eligible yet ({why})")
        placed = self._reserve_all(g.pending, cycle)
        if placed is None:
            return hold(f"{tag}: the {g.size} members cannot all start now")
        return admit(f"{tag}: all {g.size} members fit, released together")

    def _reserve_all(self, members: Sequence[JobInfo], cycle: Cycle) -> list[JobInfo] | None:
        done: list[JobInfo] = []
        for m in members:
            if m.job_id in cycle.view.placed:
                done.append(m)
                continue
            excl = cycle.exclude.get(m.job_id, frozenset())
            if cycle.view.place(m, exclude=excl, choose=cycle.chooser) is None:
                for d in done:
                    cycle.view.unreserve(d)
                return None
            done.append(m)
        return done

    def victims(self, ctx: Context, cycle: Cycle) -> Iterable[JobAction]:
        out = []
        for g in self.groups(ctx).values():
            since = self._partial_since(g, ctx)
            if since is None or ctx.now - since < self.timeout:
                continue
            for j in g.running:
                if not ctx.select.matches(j):
                    continue
                out.append(
                    JobAction(
                        j.job_id,
                        Action.REQUEUE_HOLD,
                        f"gang {g.name}: partial start ({len(g.running)} of {g.size}); "
                        "requeued held to start the group together",
                        policy=self.name,
                    )
                )
        return out
