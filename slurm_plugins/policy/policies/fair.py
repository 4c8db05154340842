"""``fair``: dominant-resource fair share across tenants, then users within a tenant.

Usage is card-hours (shards and vNPUs count as fractions of a card), core-hours and
GB-hours, decayed with a half-life: a job that ran from ``s`` to ``e`` counts
``a · ∫ 2^-((now-t)/h) dt`` over [s, e]; running jobs count up to now. Each tenant's
*dominant* share is its largest share of any resource relative to the cluster's capacity
(DRF), times an optional per-resource weight.

As Slurm's classic fair share, a tenant with normalised usage ``U`` (its dominant use over
everybody's) and share ``S`` scores ``F = 2^(-U/S)``: 1 for no use, 0.5 at exactly its
share, towards 0 above. Users within a tenant score the same way against their tenant; the
job's score is ``(k·F_tenant + F_user) / (k + 1)`` with ``k = tenant_weight``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from marshmallow import Schema, fields, validate

from plumbing.fields import Duration
from slurm_plugins.policy.base import Context, Policy, register
from slurm_plugins.policy.fields import resource_map
from slurm_plugins.policy.resources import RESOURCES, ZERO, Amounts
from slurm_plugins.policy.snapshot import JobInfo


class FairArgs(Schema):
    half_life = Duration(load_default=7 * 86400)
    weights = resource_map(load_default=lambda: dict.fromkeys(RESOURCES, 1.0))
    tenant_weight = fields.Float(load_default=3.0, validate=validate.Range(min=0))


def decayed(amount: float, start: float, end: float, now: float, half_life: float) -> float:
    """``amount`` held over [start, end], decayed to ``now`` (in amount·seconds)."""
    k = math.log(2) / half_life
    end = min(end, now)
    if end <= start:
        return 0.0
    return amount * (math.exp(-k * (now - end)) - math.exp(-k * (now - start))) / k


@dataclass(frozen=True, slots=True)
class Standing:
    """Fair-share factors of one cycle."""

    tenant: Mapping[str, float]
    user: Mapping[tuple[str, str], float]
    tenant_use: Mapping[str, float]
    tenant_share: Mapping[str, float]


@register
class Fair(Policy):
    name = "fair"
    Args = FairArgs

    def __init__(
        self,
        *,
        half_life: float = 7 * 86400,
        weights: Mapping[str, float] | None = None,
        tenant_weight: float = 3.0,
        **args: Any,
    ) -> None:
        super().__init__(**args)
        self.half_life = max(float(half_life), 1.0)
        self.weights = dict(weights if weights is not None else dict.fromkeys(RESOURCES, 1.0))
        self.k = tenant_weight
        self._cache: tuple[Context, Standing] | None = None
        self._scores: tuple[Context, dict[tuple[str, str], float]] | None = None

    @staticmethod
    def tenant_key(account: str, ctx: Context) -> str:
        """Fair share is between tenants where configured, else between accounts."""
        t = ctx.tenant_of(account)
        return t.name if t is not None else account

    def standing(self, ctx: Context) -> Standing:
        if self._cache is not None and self._cache[0] is ctx:
            return self._cache[1]
        standing = self._factors(ctx, self.usage(ctx))
        self._cache = (ctx, standing)
        return standing

    def usage(self, ctx: Context) -> dict[tuple[str, str], Amounts]:
        """Decayed resource-seconds per (tenant, user), history and running jobs together."""
        now, k = ctx.now, math.log(2) / self.half_life
        keys: dict[tuple[str, str], int] = {}
        rows: list[tuple[int, float, float, float, float, float, float]] = []
        records = [(r.account, r.user, r.amounts, r.start, r.end) for r in ctx.snapshot.usage]
        records += [(j.account, j.user, j.amounts, j.start, now) for j in ctx.running if j.start]
        for account, user, a, start, end in records:
            key = (self.tenant_key(account, ctx), user)
            idx = keys.setdefault(key, len(keys))
            rows.append((idx, start, min(end, now), a.gpu, a.npu, a.cpu, a.mem))
        for j in ctx.pending:  # active with no use yet: still a party to the share
            keys.setdefault((self.tenant_key(j.account, ctx), j.user), len(keys))
        totals = np.zeros((len(keys), 4))
        if rows:
            arr = np.asarray(rows, dtype=float)
            t0, t1 = arr[:, 1], np.maximum(arr[:, 2], arr[:, 1])
            weight = (np.exp(-k * (now - t1)) - np.exp(-k * (now - t0))) / k
            np.add.at(totals, arr[:, 0].astype(int), arr[:, 3:7] * weight[:, None])
        return {key: Amounts(*map(float, totals[i])) for key, i in keys.items()}

    def _dominant(self, a: Amounts, cap: Amounts) -> float:
        best = 0.0
        for r in RESOURCES:
            c = cap.get(r)
            if c > 0:
                best = max(best, self.weights.get(r, 0.0) * a.get(r) / c)
        return best

    def _factors(self, ctx: Context, use: Mapping[tuple[str, str], Amounts]) -> Standing:
        cap = ctx.capacity
        user_dom = {k: self._dominant(a, cap) for k, a in use.items()}
        tenant_amounts: dict[str, Amounts] = {}
        users_of: dict[str, list[str]] = {}
        for (t, u), a in use.items():
            tenant_amounts[t] = tenant_amounts.get(t, ZERO) + a
            users_of.setdefault(t, []).append(u)
        tenant_dom = {t: self._dominant(a, cap) for t, a in tenant_amounts.items()}
        total = sum(tenant_dom.values())
        shares = {t: (ctx.tenants[t].shares if t in ctx.tenants else 1.0) for t in tenant_dom}
        share_sum = sum(shares.values()) or 1.0
        norm_share = {t: s / share_sum for t, s in shares.items()}
        tenant_use = {t: (d / total if total > 0 else 0.0) for t, d in tenant_dom.items()}
        f_tenant = {t: _f(tenant_use[t], norm_share[t]) for t in tenant_dom}
        f_user: dict[tuple[str, str], float] = {}
        for t, users in users_of.items():
            t_total = sum(user_dom[(t, u)] for u in users)
            for u in users:
                u_use = user_dom[(t, u)] / t_total if t_total > 0 else 0.0
                f_user[(t, u)] = _f(u_use, 1.0 / len(users))
        return Standing(f_tenant, f_user, tenant_use, norm_share)

    def score(self, job: JobInfo, ctx: Context) -> float:
        memo = self._scores
        if memo is None or memo[0] is not ctx:
            memo = self._scores = (ctx, {})
        key = (job.account, job.user)  # all a fair-share score depends on
        found = memo[1].get(key)
        if found is None:
            st = self.standing(ctx)
            t = self.tenant_key(job.account, ctx)
            ft = st.tenant.get(t, 1.0)
            fu = st.user.get((t, job.user), 1.0)
            found = memo[1][key] = (self.k * ft + fu) / (self.k + 1)
        return found

    def explain(self, job: JobInfo, ctx: Context) -> str:
        st = self.standing(ctx)
        t = self.tenant_key(job.account, ctx)
        return (
            f"fair {self.score(job, ctx):.3f} (tenant {t} used {st.tenant_use.get(t, 0):.0%} "
            f"of recent use for a {st.tenant_share.get(t, 0):.0%} share)"
        )


def _f(use: float, share: float) -> float:
    return 2.0 ** (-use / share) if share > 0 else 0.0
