"""``capacity``: guaranteed quotas with borrowing, Kueue's semantics on Slurm accounts.

Each tenant (Kueue's ClusterQueue) has a ``nominal`` quota per resource; tenants of one
``cohort`` lend each other what they do not use. For resource ``r`` of tenant ``t``:

* ``guaranteed = nominal - lending_limit`` (0 without a lending limit) is never lent;
* the cohort's *pool* is the sum of its members' lendable quota (``nominal - guaranteed``);
* a tenant draws ``max(0, usage - guaranteed)`` from the pool;
* a job is admitted when its tenant stays within ``nominal + borrowing_limit`` and the pool
  has room for what it draws; beyond ``nominal`` it is *borrowing*.

Jobs that do not fit are held (Kueue keeps them suspended). A job within its tenant's
nominal quota is never held: if the pool is short because others borrowed, it *reclaims*:
running jobs of tenants that are over their own nominal quota are requeued — lowest QOS
first, newest first, only as many as the job needs to fit (``reclaim: any``), or only lower
QOS ones (``lower_priority``), or none (``never``). Jobs are processed in queue order and
each admitted job counts against its tenant at once, as Kueue's admission cycle does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from marshmallow import Schema, fields, validate

from slurm_plugins.policy.base import Context, Cycle, Policy, Verdict, admit, hold, register
from slurm_plugins.policy.plan import Action, JobAction
from slurm_plugins.policy.resources import RESOURCES
from slurm_plugins.policy.snapshot import JobInfo, Tenant

EPS = 1e-9
DEFAULT_RANK = {"high": 2, "normal": 1, "medium": 1, "low": 0}


class CapacityArgs(Schema):
    resources = fields.List(
        fields.String(validate=validate.OneOf(RESOURCES)), load_default=lambda: ["gpu", "npu"]
    )
    reclaim = fields.String(
        validate=validate.OneOf(["any", "lower_priority", "never"]), load_default="any"
    )
    hold_over_limit = fields.Boolean(load_default=True)
    qos_rank = fields.Dict(
        keys=fields.String(), values=fields.Integer(), load_default=lambda: dict(DEFAULT_RANK)
    )


def _fmt(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


@dataclass
class Ledger:
    """Quota usage per tenant and resource while one cycle admits jobs."""

    tenants: Mapping[str, Tenant]
    resources: tuple[str, ...]
    usage: dict[str, dict[str, float]] = field(default_factory=dict)
    pool_used: dict[str, dict[str, float]] = field(default_factory=dict)

    def cohort(self, t: Tenant) -> str:
        return t.cohort or f"~{t.name}"

    def nominal(self, t: Tenant, r: str) -> float:
        return t.nominal.get(r, 0.0)

    def guaranteed(self, t: Tenant, r: str) -> float:
        lend = t.lending_limit.get(r)
        return max(self.nominal(t, r) - lend, 0.0) if lend is not None else 0.0

    def pool(self, cohort: str, r: str) -> float:
        return sum(
            self.nominal(t, r) - self.guaranteed(t, r)
            for t in self.tenants.values()
            if self.cohort(t) == cohort
        )

    def used(self, t: Tenant, r: str) -> float:
        return self.usage.get(t.name, {}).get(r, 0.0)

    def add(self, t: Tenant, q: Mapping[str, float], sign: float = 1.0) -> None:
        u = self.usage.setdefault(t.name, {})
        p = self.pool_used.setdefault(self.cohort(t), {})
        for r, n in q.items():
            g = self.guaranteed(t, r)
            before = max(0.0, u.get(r, 0.0) - g)
            u[r] = u.get(r, 0.0) + sign * n
            p[r] = p.get(r, 0.0) + max(0.0, u[r] - g) - before

    def within_nominal(self, t: Tenant, q: Mapping[str, float]) -> bool:
        return all(self.used(t, r) + n <= self.nominal(t, r) + EPS for r, n in q.items())

    def borrowing(self, t: Tenant, rs: Iterable[str]) -> bool:
        return any(self.used(t, r) > self.nominal(t, r) + EPS for r in rs)

    def check(self, t: Tenant, q: Mapping[str, float]) -> str | None:
        """Why ``q`` does not fit for ``t`` now, or None when it does."""
        c = self.cohort(t)
        for r, n in q.items():
            used, nom = self.used(t, r), self.nominal(t, r)
            limit = t.borrowing_limit.get(r)
            if limit is not None and used + n > nom + limit + EPS:
                return (
                    f"tenant {t.name} at its borrowing limit: {_fmt(used)}+{_fmt(n)} {r} > "
                    f"{_fmt(nom)} guaranteed + {_fmt(limit)} borrowable"
                )
            g = self.guaranteed(t, r)
            draw = max(0.0, used + n - g) - max(0.0, used - g)
            free = self.pool(c, r) - self.pool_used.get(c, {}).get(r, 0.0)
            if draw > free + EPS:
                where = f"cohort {t.cohort}" if t.cohort else f"tenant {t.name}"
                return f"{where} has {_fmt(max(free, 0))} {r} of quota left, job needs {_fmt(n)}"
        return None


@register
class Capacity(Policy):
    name = "capacity"
    Args = CapacityArgs

    def __init__(
        self,
        resources: Sequence[str] = ("gpu", "npu"),
        reclaim: str = "any",
        hold_over_limit: bool = True,
        qos_rank: Mapping[str, int] | None = None,
        **args: Any,
    ) -> None:
        super().__init__(**args)
        self.resources = tuple(resources)
        self.reclaim = reclaim
        self.hold_over_limit = hold_over_limit
        self.rank = dict(DEFAULT_RANK if qos_rank is None else qos_rank)

    def demand(self, job: JobInfo) -> dict[str, float]:
        return {r: v for r in self.resources if (v := job.amounts.get(r)) > 0}

    def ledger(self, ctx: Context, cycle: Cycle | None = None) -> Ledger:
        key = "capacity.ledger"
        memo = cycle.memo if cycle is not None else None
        if memo is not None and key in memo:
            led: Ledger = memo[key]
            return led
        led = Ledger(ctx.tenants, self.resources)
        for name, a in ctx.tenant_usage.items():
            led.add(ctx.tenants[name], {r: a.get(r) for r in self.resources})
        if memo is not None:
            memo[key] = led
            memo["capacity.reclaim"] = []
        return led

    def score(self, job: JobInfo, ctx: Context) -> float | None:
        t, q = ctx.tenant(job), self.demand(job)
        if t is None or not q:
            return None
        led = self._static(ctx)
        if led.within_nominal(t, q):
            return 1.0
        return 0.5 if led.check(t, q) is None else 0.0

    def _static(self, ctx: Context) -> Ledger:
        cached = getattr(self, "_static_cache", None)
        if cached is not None and cached[0] is ctx:
            led: Ledger = cached[1]
            return led
        led = self.ledger(ctx)
        self._static_cache = (ctx, led)
        return led

    def explain(self, job: JobInfo, ctx: Context) -> str:
        s = self.score(job, ctx)
        what = {1.0: "within guarantee", 0.5: "would borrow", 0.0: "over its limits"}
        return f"capacity {s:.1f} ({what.get(s, '')})" if s is not None else ""

    def admit(self, job: JobInfo, ctx: Context, cycle: Cycle) -> Verdict | None:
        t, q = ctx.tenant(job), self.demand(job)
        if t is None or not q:
            return None
        led = self.ledger(ctx, cycle)
        within = led.within_nominal(t, q)
        why = led.check(t, q)
        shown = ", ".join(
            f"{_fmt(led.used(t, r) + n)} of {_fmt(led.nominal(t, r))} {r}" for r, n in q.items()
        )
        if within:
            led.add(t, q)
            if why is None:
                return admit(f"capacity: tenant {t.name} within its guarantee ({shown})")
            cycle.memo["capacity.reclaim"].append(job)
            return admit(f"capacity: tenant {t.name} within its guarantee ({shown}); reclaiming")
        if why is None:
            over = ", ".join(
                f"{_fmt(led.used(t, r) + n - led.nominal(t, r))} {r}"
                for r, n in q.items()
                if led.used(t, r) + n > led.nominal(t, r) + EPS
            )
            led.add(t, q)
            return admit(f"capacity: tenant {t.name} over guarantee by {over}, borrowing")
        return hold(f"capacity: {why}") if self.hold_over_limit else None

    def victims(self, ctx: Context, cycle: Cycle) -> Iterable[JobAction]:
        if self.reclaim == "never":
            return []
        led = self.ledger(ctx, cycle)
        taken: set[int] = set()
        out: list[JobAction] = []
        for job in cycle.memo.get("capacity.reclaim", []):
            if job.job_id in cycle.view.placed:
                continue  # fits on free resources already
            found = self._reclaim_for(job, ctx, cycle, led, taken)
            for v in found:
                vt = ctx.tenant(v)
                assert vt is not None
                taken.add(v.job_id)
                out.append(
                    JobAction(
                        v.job_id,
                        Action.REQUEUE,
                        f"capacity: reclaimed for tenant {ctx.tenant(job).name}'s guarantee "  # type: ignore[union-attr]
                        f"(job {job.job_id}); tenant {vt.name} was borrowing",
                        policy=self.name,
                    )
                )
        return out

    def _reclaim_for(
        self, job: JobInfo, ctx: Context, cycle: Cycle, led: Ledger, taken: set[int]
    ) -> list[JobInfo]:
        t = ctx.tenant(job)
        assert t is not None
        q = self.demand(job)
        parts = set(job.partition.split(","))
        mine = self.rank.get(job.qos, 1)
        cands = []
        for r in ctx.running:
            rt = ctx.tenant(r)
            if rt is None or rt.name == t.name or led.cohort(rt) != led.cohort(t):
                continue
            if r.job_id in taken or not r.requeue or not self.demand(r):
                continue
            if self.reclaim == "lower_priority" and self.rank.get(r.qos, 1) >= mine:
                continue
            if not any(parts & set(ctx.nodes[n].partitions) for n in r.nodes if n in ctx.nodes):
                continue
            cands.append(r)
        cands.sort(key=lambda r: (self.rank.get(r.qos, 1), -(r.start or 0), -r.job_id))
        view, exclude = cycle.view, cycle.exclude.get(job.job_id, frozenset())
        victims: list[JobInfo] = []
        for c in cands:
            ct = ctx.tenant(c)
            assert ct is not None
            if not led.borrowing(ct, q):
                continue
            view.evict(c)
            led.add(ct, self.demand(c), -1.0)
            victims.append(c)
            if view.find(job, exclude=exclude) is not None:
                break
        else:
            for c in victims:
                view.restore(c)
                led.add(ctx.tenant(c), self.demand(c))  # type: ignore[arg-type]
            return []
        for c in list(reversed(victims[:-1])):  # put back what turned out not to be needed
            view.restore(c)
            if view.find(job, exclude=exclude) is None:
                view.evict(c)
            else:
                led.add(ctx.tenant(c), self.demand(c))  # type: ignore[arg-type]
                victims.remove(c)
        view.place(job, exclude=exclude, choose=cycle.chooser)
        return victims
