"""fair: dominant-resource fair share with decayed usage, table-driven."""

from __future__ import annotations

import math

import pytest

from slurm_plugins.policy.base import Context
from slurm_plugins.policy.policies.fair import Fair, decayed
from slurm_plugins.policy.resources import Amounts
from slurm_plugins.policy.snapshot import Tenant, UsageRecord
from tests.unit.policy.builders import NOW, gpu_node, job, npu_node, pol, run, running, snap

DAY = 86400.0


def used(
    account: str,
    user: str,
    *,
    gpu: float = 0,
    npu: float = 0,
    cpu: float = 0,
    hours: float = 10,
    ago: float = 0,
) -> UsageRecord:
    end = NOW - ago
    return UsageRecord(account, user, end - hours * 3600, end, Amounts(gpu, npu, cpu, 0))


def test_decay_halves_after_one_half_life() -> None:
    h = 7 * DAY
    recent = decayed(1.0, NOW - 3600, NOW, NOW, h)
    old = decayed(1.0, NOW - h - 3600, NOW - h, NOW, h)
    assert recent == pytest.approx(3600, rel=1e-2)
    assert old == pytest.approx(recent / 2, rel=1e-3)
    assert decayed(1.0, NOW, NOW - 5, NOW, h) == 0.0


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        pytest.param([used("vision", "bob", gpu=8)], [2, 1], id="light-tenant-overtakes-heavy"),
        pytest.param([used("nlp", "alice", gpu=8)], [1, 2], id="heavy-other-way"),
        pytest.param(
            [used("vision", "bob", gpu=8, ago=60 * DAY), used("nlp", "alice", gpu=1)],
            [1, 2],
            id="old-use-decays-away",
        ),
        pytest.param([], [1, 2], id="no-history-falls-back-to-submit-order"),
        pytest.param(
            [used("vision", "bob", npu=8), used("nlp", "alice", gpu=1)],
            [2, 1],
            id="dominant-resource-npu",
        ),
    ],
)
def test_fair_order(usage: list[UsageRecord], expected: list[int]) -> None:
    jobs = [
        job(1, user="bob", account="vision", gpus=1, submit=NOW - 100),
        job(2, user="alice", account="nlp", gpus=1, submit=NOW - 50),
    ]
    p = run(
        snap(jobs, [gpu_node("gpu1"), npu_node("npu1")], usage=usage),
        pol("fair", half_life=7 * DAY),
    )
    assert list(p.order) == expected


def test_running_jobs_count_as_use() -> None:
    jobs = [
        running(10, "gpu1", user="bob", account="vision", gpus=4, start=NOW - 5 * 3600),
        job(1, user="bob", account="vision", gpus=1, submit=NOW - 100),
        job(2, user="carol", account="cs101", gpus=1, submit=NOW - 50),
    ]
    p = run(snap(jobs, [gpu_node("gpu1"), gpu_node("gpu2")]), "fair")
    assert list(p.order) == [2, 1]


def test_users_within_a_tenant() -> None:
    jobs = [
        job(1, user="carol", account="cs101", submit=NOW - 100),
        job(2, user="dave", account="cs101", submit=NOW - 50),
    ]
    usage = [used("cs101", "carol", gpu=2)]
    p = run(snap(jobs, [gpu_node("gpu1")], usage=usage), "fair")
    assert list(p.order) == [2, 1]


def test_tenant_shares_and_factor_values() -> None:
    tenants = [Tenant("nlp", shares=3), Tenant("vision", shares=1)]
    usage = [used("nlp", "alice", gpu=3), used("vision", "bob", gpu=1)]
    s = snap(
        [job(1, account="nlp"), job(2, account="vision", user="bob")],
        [gpu_node("gpu1")],
        tenants=tenants,
        usage=usage,
    )
    ctx = Context(s)
    st = Fair().standing(ctx)
    # each used exactly its share: F = 2^-1
    assert st.tenant["nlp"] == pytest.approx(0.5)
    assert st.tenant["vision"] == pytest.approx(0.5)
    assert st.tenant_use["nlp"] == pytest.approx(0.75)


def test_fractional_cards_count_as_fractions() -> None:
    # 32 shards-hours of one card are one card-hour: equal to one whole GPU for an hour
    a = used("nlp", "alice", gpu=16 / 32 * 2, hours=1)
    b = used("vision", "bob", gpu=1, hours=1)
    s = snap(
        [job(1, account="nlp"), job(2, account="vision", user="bob")],
        [gpu_node("gpu1")],
        usage=[a, b],
    )
    st = Fair().standing(Context(s))
    assert st.tenant["nlp"] == pytest.approx(st.tenant["vision"])


def test_factor_formula() -> None:
    usage = [used("vision", "bob", gpu=4)]
    s = snap(
        [job(1, account="nlp"), job(2, account="vision", user="bob")],
        [gpu_node("gpu1")],
        usage=usage,
    )
    ctx = Context(s)
    fair = Fair(tenant_weight=3)
    # vision used all: U=1, S=1/2 -> 2^-2; nlp nothing -> 1; users alone in their tenant
    assert fair.score(ctx.jobs[2], ctx) == pytest.approx((3 * 0.25 + 2**-1) / 4)
    assert fair.score(ctx.jobs[1], ctx) == pytest.approx(1.0)
    assert "tenant vision used 100%" in fair.explain(ctx.jobs[2], ctx)
    assert math.isclose(fair.score(ctx.jobs[1], ctx), 1.0)
