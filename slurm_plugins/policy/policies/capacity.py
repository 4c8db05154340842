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

A job admitted as borrowing is moved to the preemptible ``borrow_qos`` (``low``) before it
starts, so that Slurm itself preempts (requeues) it the moment other work needs the room;
a pending job back within its tenant's quota returns to its own QOS (kept in the daemon's
state; policies that rank by class read that one). Slurm 22.05 changes the QOS of pending
jobs only: a job that started before the daemon saw it keeps its QOS and is reclaimed by
the daemon's requeue above.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
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
    #: Jobs that may reclaim per cycle (each may requeue several borrowed jobs).
    max_reclaims = fields.Integer(load_default=16, validate=validate.Range(min=0))
    #: QOS that borrowed work runs in: one that the owners' QOS preempt (null: keep QOS).
    borrow_qos = fields.String(
        load_default="low",
        allow_none=True,
        validate=validate.Regexp(r"^[A-Za-z0-9_.-]+$", error="not a QOS name: {input!r}"),
    )


@lru_cache(maxsize=4096)
def _fmt(x: float) -> str:
    return f"{round(x, 2):g}"


@dataclass
class Ledger:
    """Quota usage per tenant and resource while one cycle admits jobs."""

    tenants: Mapping[str, Tenant]
    resources: tuple[str, ...]
    usage: dict[str, dict[str, float]] = field(default_factory=dict)
    pool_used: dict[str, dict[str, float]] = field(default_factory=dict)
    _pools: dict[tuple[str, str], float] = field(default_factory=dict)

    def cohort(self, t: Tenant) -> str:
        return t.cohort or f"~{t.name}"

    def nominal(self, t: Tenant, r: str) -> float:
        return t.nominal.get(r, 0.0)

    def guaranteed(self, t: Tenant, r: str) -> float:
        lend = t.lending_limit.get(r)
        return max(self.nominal(t, r) - lend, 0.0) if lend is not None else 0.0

    def pool(self, cohort: str, r: str) -> float:
        key = (cohort, r)
        if key not in self._pools:
            self._pools[key] = sum(
                self.nominal(t, r) - self.guaranteed(t, r)
                for t in self.tenants.values()
                if self.cohort(t) == cohort
            )
        return self._pools[key]

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
        *,
        resources: Sequence[str] = ("gpu", "npu"),
        reclaim: str = "any",
        hold_over_limit: bool = True,
        qos_rank: Mapping[str, int] | None = None,
        max_reclaims: int = 16,
        borrow_qos: str | None = "low",
        **args: Any,
    ) -> None:
        super().__init__(**args)
        self.resources = tuple(resources)
        self.reclaim = reclaim
        self.hold_over_limit = hold_over_limit
        self.rank = dict(DEFAULT_RANK if qos_rank is None else qos_rank)
        self.max_reclaims = max_reclaims
        self.borrow_qos = borrow_qos
        self._score_memo: tuple[Context, dict[tuple[object, ...], float | None]] | None = None
        self._demands: dict[tuple[float, ...], dict[str, float]] = {}

    def demand(self, job: JobInfo) -> dict[str, float]:
        """What the job draws from quotas (shared between jobs alike: read it, never write)."""
        a = job.amounts
        key = (a.gpu, a.npu, a.cpu, a.mem)
        found = self._demands.get(key)
        if found is None:
            found = self._demands[key] = {r: v for r in self.resources if (v := a.get(r)) > 0}
        return found

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
            memo["capacity.reclaim"] = []  # (job, its tenant) admitted by reclaiming
        return led

    def score(self, job: JobInfo, ctx: Context) -> float | None:
        a = job.amounts
        key = (job.account, a.gpu, a.npu, a.cpu, a.mem)  # all the score depends on
        memo = self._score_memo
        if memo is None or memo[0] is not ctx:
            memo = self._score_memo = (ctx, {})
        if key in memo[1]:
            return memo[1][key]
        t, q = ctx.tenant(job), self.demand(job)
        value: float | None = None
        if t is not None and q:
            led = self._static(ctx)
            within = led.within_nominal(t, q)
            value = 1.0 if within else (0.5 if led.check(t, q) is None else 0.0)
        memo[1][key] = value
        return value

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
            cycle.memo["capacity.reclaim"].append((job, t))
            return admit(f"capacity: tenant {t.name} within its guarantee ({shown}); reclaiming")
        if why is None:
            over = ", ".join(
                f"{_fmt(led.used(t, r) + n - led.nominal(t, r))} {r}"
                for r, n in q.items()
                if led.used(t, r) + n > led.nominal(t, r) + EPS
            )
            led.add(t, q)
            why = f"capacity: tenant {t.name} over guarantee by {over}, borrowing"
            if self.borrow_qos is None:
                return admit(why)
            return admit(f"{why} in QOS {self.borrow_qos}", qos=self.borrow_qos)
        return hold(f"capacity: {why}") if self.hold_over_limit else None

    def victims(self, ctx: Context, cycle: Cycle) -> Iterable[JobAction]:
        if self.reclaim == "never":
            return []
        todo = [
            (j, t)
            for j, t in cycle.memo.get("capacity.reclaim", [])
            if j.job_id not in cycle.view.placed
        ]
        # Victims are judged by what runs: a tenant whose *pending* jobs were admitted beyond
        # its quota has not borrowed anything yet, and its running work is safe.
        led = self.ledger(ctx)
        if not todo:
            return []
        borrowed = self._borrowed(ctx, led)
        out: list[JobAction] = []
        for job, t in todo[: self.max_reclaims]:
            for v in self._reclaim_for(job, t, ctx=ctx, cycle=cycle, led=led, borrowed=borrowed):
                vt = ctx.tenant(v)
                out.append(
                    JobAction(
                        v.job_id,
                        Action.REQUEUE,
                        f"capacity: reclaimed for tenant {t.name}'s guarantee (job {job.job_id}); "
                        f"tenant {vt.name if vt else v.account} was borrowing",
                        policy=self.name,
                    )
                )
        return out

    def _rank(self, job: JobInfo, ctx: Context) -> int:
        """Rank of the job's own priority class (not of the QOS it borrows in)."""
        return self.rank.get(ctx.qos_class(job), 1)

    def _borrowed(self, ctx: Context, led: Ledger) -> dict[str, list[JobInfo]]:
        """Requeueable running jobs of borrowing tenants, per node, cheapest victim first."""
        out: dict[str, list[JobInfo]] = {}
        borrowing: dict[str, bool] = {}  # per tenant: tens of thousands of jobs, a few tenants
        for r in ctx.movable:
            rt = ctx.tenant(r)
            if rt is None or not r.requeue:
                continue
            if rt.name not in borrowing:
                borrowing[rt.name] = led.borrowing(rt, self.resources)
            if not borrowing[rt.name]:
                continue
            if not self.demand(r):
                continue
            for n in r.nodes:
                out.setdefault(n, []).append(r)
        for jobs in out.values():
            jobs.sort(key=lambda r: (self._rank(r, ctx), -(r.start or 0), -r.job_id))
        return out

    def _reclaim_for(
        self,
        job: JobInfo,
        t: Tenant,
        *,
        ctx: Context,
        cycle: Cycle,
        led: Ledger,
        borrowed: dict[str, list[JobInfo]],
    ) -> list[JobInfo]:
        """The cheapest set of borrowed jobs whose requeue lets ``job`` start, or none.

        Per node that could host the job: take its borrowed jobs in order (lowest QOS,
        newest first) while their tenant is still borrowing, until the job fits there.
        The nodes needing the fewest, lowest-ranked, smallest and newest victims win.
        """
        q = self.demand(job)
        mine = self._rank(job, ctx)
        view = cycle.view
        options: list[tuple[tuple[float, ...], str, list[JobInfo]]] = []
        for node in view.hosts(job, exclude=cycle.exclude.get(job.job_id, frozenset())):
            victims: list[JobInfo] = []
            for c in borrowed.get(node.name, ()):
                if node.fits(job.demand):
                    break
                ct = ctx.tenant(c)
                if ct is None or ct.name == t.name or led.cohort(ct) != led.cohort(t):
                    continue
                if self.reclaim == "lower_priority" and self._rank(c, ctx) >= mine:
                    continue
                if len(c.nodes) > 1 and any(c.job_id == v.job_id for v in victims):
                    continue
                if not led.borrowing(ct, q):
                    continue
                view.evict(c)
                led.add(ct, self.demand(c), -1.0)
                victims.append(c)
            fits = bool(victims) and node.fits(job.demand)
            for c in reversed(victims):
                view.restore(c)
                led.add(ctx.tenant(c) or t, self.demand(c))
            if fits:
                cost = (
                    len(victims),
                    sum(self._rank(v, ctx) for v in victims),
                    sum(sum(self.demand(v).values()) for v in victims),
                    -max(v.start or 0 for v in victims),
                )
                options.append((cost, node.name, victims))
        options.sort(key=lambda o: (o[0], o[1]))
        chosen = options[: job.node_count]
        if len(chosen) < job.node_count:
            return []
        victims = list({v.job_id: v for _, _, vs in chosen for v in vs}.values())
        for v in victims:
            if v.job_id in cycle.memo.setdefault("capacity.taken", set()):
                continue
            cycle.memo["capacity.taken"].add(v.job_id)
            view.evict(v)
            led.add(ctx.tenant(v) or t, self.demand(v), -1.0)
            for nodes in borrowed.values():
                if v in nodes:
                    nodes.remove(v)
        view.reserve(job, [name for _, name, _ in chosen])
        return victims
