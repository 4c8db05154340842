"""Kueue's invariants of the capacity policy, on random cohorts (hypothesis).

The model below restates Kueue's admission rules plainly (pool sums recomputed from
scratch for every job) and the policy must agree with it job by job; reclaim must only
take from tenants that are borrowing, and never for a job that would itself borrow; work
admitted beyond its tenant's nominal quota, and only that, is moved to the preemptible QOS.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurm_plugins.policy.plan import Action
from slurm_plugins.policy.snapshot import JobInfo, Tenant
from tests.unit.policy.builders import gpu_node, held_ids, job, run, running, snap

EPS = 1e-9
NAMES = ["t0", "t1", "t2"]


@st.composite
def scenario(draw: st.DrawFn) -> tuple[list[Tenant], list[JobInfo]]:
    tenants = []
    for name in NAMES[: draw(st.integers(2, 3))]:
        nominal = draw(st.integers(0, 8))
        borrow = draw(st.none() | st.integers(0, 8))
        lend = draw(st.none() | st.integers(0, nominal))
        tenants.append(
            Tenant(
                name,
                cohort="c",
                nominal={"gpu": nominal},
                borrowing_limit={} if borrow is None else {"gpu": borrow},
                lending_limit={} if lend is None else {"gpu": lend},
            )
        )
    jobs: list[JobInfo] = []
    free = {f"gpu{i}": 4 for i in range(1, 5)}
    for i in range(draw(st.integers(0, 6))):
        g = draw(st.integers(1, 4))
        node = next((n for n, f in free.items() if f >= g), None)
        if node is None:
            continue
        free[node] -= g
        t = draw(st.sampled_from(tenants)).name
        qos = draw(st.sampled_from(["low", "normal", "high"]))
        jobs.append(running(100 + i, node, account=t, gpus=g, start=1000.0 + i, qos=qos))
    for i in range(draw(st.integers(1, 8))):
        t = draw(st.sampled_from(tenants)).name
        jobs.append(
            job(
                200 + i,
                account=t,
                gpus=draw(st.integers(1, 4)),
                qos=draw(st.sampled_from(["low", "normal", "high"])),
            )
        )
    return tenants, jobs


def pool_room(tenants: dict[str, Tenant], use: dict[str, float]) -> float:
    def g(t: Tenant) -> float:
        lend = t.lending_limit.get("gpu")
        return t.nominal["gpu"] - lend if lend is not None else 0.0

    pool = sum(t.nominal["gpu"] - g(t) for t in tenants.values())
    drawn = sum(max(0.0, use[n] - g(t)) for n, t in tenants.items())
    return pool - drawn


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario())
def test_capacity_agrees_with_kueue_model(case: tuple[list[Tenant], list[JobInfo]]) -> None:
    tenant_list, jobs = case
    tenants = {t.name: t for t in tenant_list}
    s = snap(jobs, [gpu_node(f"gpu{i}") for i in range(1, 5)], tenants=tenant_list)
    p = run(s, "capacity")
    by_id = {j.job_id: j for j in s.jobs}
    use0 = {n: sum(j.amounts.gpu for j in s.jobs if j.running and j.account == n) for n in tenants}
    use = dict(use0)
    held = held_ids(p)
    moved = {c.job_id: c.qos for c in p.job_changes if c.qos is not None}
    reclaimers: list[JobInfo] = []
    for jid in p.order:
        j = by_id[jid]
        t, q = tenants[j.account], j.amounts.gpu
        nominal = t.nominal["gpu"]
        within = use[j.account] + q <= nominal + EPS
        limit = t.borrowing_limit.get("gpu")
        after = dict(use, **{j.account: use[j.account] + q})
        fits = (limit is None or after[j.account] <= nominal + limit + EPS) and pool_room(
            tenants, after
        ) >= -EPS
        if within or fits:
            assert jid not in held, f"job {jid} should be admitted"
            use[j.account] += q
            # invariant: a borrowing admission never exceeds the borrowing limit or the pool
            if not within:
                assert limit is None or use[j.account] <= nominal + limit + EPS
                assert pool_room(tenants, use) >= -EPS
                # borrowed work runs preemptible: moved to low unless it already is
                assert moved.get(jid) == (None if j.qos == "low" else "low")
            else:
                assert jid not in moved, "work within its guarantee keeps its own QOS"
                if not fits:
                    reclaimers.append(j)
        else:
            assert jid in held, f"job {jid} should be held"
            assert jid not in moved, "held work keeps its own QOS"
    victims = [by_id[a.job_id] for a in p.actions_of(Action.REQUEUE)]
    assert len(p.actions) == len(victims)
    if victims:
        assert reclaimers, "reclaim only for a job within its tenant's nominal quota"
    for v in victims:
        t = tenants[v.account]
        assert v.running
        assert use0[v.account] > t.nominal["gpu"] + EPS, "victim's tenant was borrowing"
        assert any(r.account != v.account for r in reclaimers), "never from the reclaimer's own"
