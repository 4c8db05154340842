"""capacity: Kueue's nominal quota, borrowing and lending limits, reclaim within a cohort."""

from __future__ import annotations

import pytest

from slurm_plugins.policy.plan import Action
from slurm_plugins.policy.snapshot import Tenant
from tests.unit.policy.builders import gpu_node, held_ids, job, pol, run, running, snap


def tenants(**kw: dict) -> list[Tenant]:
    base = {
        "nlp": {"cohort": "research", "nominal": {"gpu": 4}},
        "vision": {"cohort": "research", "nominal": {"gpu": 4}},
    }
    for name, extra in kw.items():
        base.setdefault(name, {}).update(extra)
    return [Tenant(name, **v) for name, v in base.items()]


NODES = [gpu_node("gpu1"), gpu_node("gpu2")]


@pytest.mark.parametrize(
    ("jobs", "quota", "held", "reason_of"),
    [
        pytest.param(
            [running(1, "gpu1", account="vision", gpus=4), job(2, account="vision", gpus=2)],
            {},
            set(),
            (2, "capacity: tenant vision over guarantee by 2 gpu, borrowing"),
            id="borrow-idle-quota-of-cohort",
        ),
        pytest.param(
            [running(1, "gpu1", account="vision", gpus=4), job(2, account="vision", gpus=2)],
            {"vision": {"borrowing_limit": {"gpu": 1}}},
            {2},
            (2, "at its borrowing limit"),
            id="borrowing-limit",
        ),
        pytest.param(
            [running(1, "gpu1", account="vision", gpus=4), job(2, account="vision", gpus=2)],
            {"nlp": {"lending_limit": {"gpu": 1}}},
            {2},
            (2, "cohort research has 1 gpu of quota left"),
            id="lending-limit",
        ),
        pytest.param(
            [job(1, account="nlp", gpus=3), job(2, account="nlp", gpus=1)],
            {},
            set(),
            (2, "within its guarantee (4 of 4 gpu)"),
            id="within-nominal",
        ),
        pytest.param(
            [
                job(1, account="nlp", gpus=4),
                job(2, account="nlp", gpus=4),
                job(3, account="nlp", gpus=1),
            ],
            {},
            {3},
            (3, "cohort research has 0 gpu of quota left"),
            id="admitted-jobs-count-at-once",
        ),
        pytest.param(
            [job(1, account="physics", gpus=8)],
            {},
            set(),
            None,
            id="no-tenant-no-opinion",
        ),
        pytest.param(
            [job(1, account="vision", partition="cpu", cpus=4)],
            {},
            set(),
            None,
            id="cpu-only-not-covered",
        ),
        pytest.param(
            [running(1, ["gpu1", "gpu2"], account="nlp", gpus=3), job(2, account="nlp", gpus=3)],
            {},
            {2},
            (2, "cohort research has 2 gpu of quota left"),
            id="multi-node-jobs-count-per-node",
        ),
    ],
)
def test_admission(
    jobs: list, quota: dict, held: set[int], reason_of: tuple[int, str] | None
) -> None:
    p = run(snap(jobs, NODES, tenants=tenants(**quota)), "capacity")
    assert held_ids(p) == held
    if reason_of is not None:
        jid, text = reason_of
        assert any(text in r for r in p.reasons[jid]), p.reasons[jid]
    else:
        assert not any("capacity" in r for rs in p.reasons.values() for r in rs)


def test_owner_reclaims_its_guarantee_from_borrowers() -> None:
    jobs = [
        running(1, "gpu1", account="vision", gpus=4, start=1000),
        running(2, "gpu2", account="vision", gpus=2, start=2000, qos="normal"),
        running(3, "gpu2", account="vision", gpus=2, start=3000, qos="normal"),
        job(4, account="nlp", gpus=2),
    ]
    p = run(snap(jobs, NODES, tenants=tenants()), "capacity")
    requeued = p.actions_of(Action.REQUEUE)
    # newest borrowed job goes first, and only as many as needed
    assert [a.job_id for a in requeued] == [3]
    assert (
        "capacity: reclaimed for tenant nlp's guarantee (job 4); tenant vision was borrowing"
        in requeued[0].reason
    )
    assert held_ids(p) == set()
    note = p.notifications[0]
    assert note.job_id == 3
    assert note.users[0] == "alice"


def test_reclaim_prefers_lower_qos_and_respects_lower_priority_mode() -> None:
    jobs = [
        running(1, "gpu1", account="vision", gpus=4, start=1000),
        running(2, "gpu2", account="vision", gpus=2, start=2000, qos="low"),
        running(3, "gpu2", account="vision", gpus=2, start=3000, qos="high"),
        job(4, account="nlp", gpus=2, qos="normal"),
    ]
    s = snap(jobs, NODES, tenants=tenants())
    assert [a.job_id for a in run(s, "capacity").actions] == [2]
    jobs[1] = running(2, "gpu2", account="vision", gpus=2, start=2000, qos="high")
    s = snap(jobs, NODES, tenants=tenants())
    assert run(s, pol("capacity", reclaim="lower_priority")).actions == ()
    assert run(s, pol("capacity", reclaim="never")).actions == ()


def test_no_reclaim_from_a_tenant_within_its_nominal() -> None:
    jobs = [
        running(1, "gpu1", account="vision", gpus=4),
        running(2, "gpu2", account="nlp", gpus=4),
        job(3, account="nlp", gpus=1),  # nlp would borrow: must not reclaim
    ]
    p = run(snap(jobs, NODES, tenants=tenants()), "capacity")
    assert p.actions == ()
    assert held_ids(p) == {3}


def test_no_reclaim_when_free_room_exists() -> None:
    nodes = [*NODES, gpu_node("gpu3")]
    jobs = [
        running(1, "gpu1", account="vision", gpus=4),
        running(2, "gpu2", account="vision", gpus=4),
        job(3, account="nlp", gpus=2),
    ]
    p = run(snap(jobs, nodes, tenants=tenants()), "capacity")
    assert p.actions == ()


def test_no_pointless_reclaim() -> None:
    """If evicting every borrower would still not make room, nothing is requeued."""
    jobs = [
        running(1, "gpu1", account="vision", gpus=4),
        running(2, "gpu2", account="vision", gpus=1),
        job(3, account="nlp", gpus=4, partition="gpu", mem=100_000),
    ]
    p = run(snap(jobs, NODES, tenants=tenants()), "capacity")
    assert p.actions == ()


def test_within_nominal_score_first() -> None:
    jobs = [
        running(1, "gpu1", account="vision", gpus=4),
        job(2, account="vision", gpus=1, submit=1),
        job(3, account="nlp", gpus=1, submit=2),
    ]
    p = run(snap(jobs, NODES, tenants=tenants()), "capacity")
    assert list(p.order) == [3, 2]


def test_tenant_by_parent_account() -> None:
    t = [Tenant("research", nominal={"gpu": 1})]
    s = snap([job(1, account="nlp", gpus=2)], NODES, tenants=t, accounts={"nlp": "research"})
    p = run(s, "capacity")
    assert held_ids(p) == {1}
    assert "tenant research has 1 gpu of quota left" in p.reasons[1][0]
