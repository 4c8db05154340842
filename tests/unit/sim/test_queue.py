"""The time-based simulator: Slurm's start rule, the daemon's plan applied, the measures."""

from __future__ import annotations

import math

import pytest

from gres.placement import Request
from sim import metrics
from sim.daemon import Daemon, demand_of, node_infos
from sim.queue import QueueRun, QueueSim, Sample, SimJob
from sim.trace import NodeSpec
from slurm_plugins.policy.engine import PolicyConfig
from slurm_plugins.policy.snapshot import Tenant

NODES = [NodeSpec("n1", 16_000, 65_536, 2, "A100"), NodeSpec("n2", 16_000, 65_536, 2, "A100")]
ONE = [NodeSpec("big", 32_000, 131_072, 4, "A100")]


def job(
    job_id: int,
    submit: float,
    runtime: float,
    *,
    gpus: int = 1,
    milli: int = 1000,
    account: str = "a",
    qos: str = "normal",
) -> SimJob:
    request = Request(2_000, 1_024, milli, gpus)
    return SimJob(job_id, f"j{job_id}", account, account, qos, request, submit, runtime, qos)


def test_jobs_start_when_they_fit_and_wait_otherwise() -> None:
    jobs = [job(1, 0, 10, gpus=2), job(2, 0, 10, gpus=2), job(3, 1, 5, gpus=2)]
    run = QueueSim(NODES, jobs, None).run()
    starts = {j.job_id: j.first_start for j in run.jobs}
    assert starts == {1: 0, 2: 0, 3: 10}
    assert all(j.state == "COMPLETED" for j in run.jobs)
    assert run.end == 15
    assert metrics.mean_allocation(run) == pytest.approx(100 * (4 * 10 + 2 * 5) / (4 * 15))


def test_shares_take_the_lowest_card_with_room() -> None:
    jobs = [job(1, 0, 10, milli=500), job(2, 0, 10, milli=500), job(3, 0, 10, milli=250)]
    sim = QueueSim(NODES[:1], jobs, None)
    sim.run(progress=lambda done, total: None)
    assert [j.cards for j in sim.jobs] == [(0,), (0,), (1,)]


def test_fifo_daemon_orders_by_submit_time() -> None:
    jobs = [job(1, 0, 100, gpus=4), job(2, 1, 10, gpus=2), job(3, 2, 10, gpus=4)]
    jobs += [job(4, 3, 10, gpus=2)]
    daemon = Daemon([PolicyConfig("fifo")])
    run = QueueSim(ONE, jobs, daemon, cycle_s=1).run()
    first = {j.job_id: j.first_start for j in run.jobs}
    assert first == {1: 0, 2: 100, 3: 110, 4: 100}  # 4 fills the gap 3 cannot use
    assert run.cycles > 0
    factors = {j.job_id: j.site_factor for j in run.jobs}
    assert factors[2] > 0


def test_priority_daemon_lets_high_overtake_low() -> None:
    jobs = [
        job(1, 0, 50, gpus=4),
        job(2, 1, 10, gpus=4, qos="low"),
        job(3, 2, 10, gpus=4, qos="high"),
    ]
    run = QueueSim(ONE, jobs, Daemon([PolicyConfig("priority")]), cycle_s=1).run()
    first = {j.job_id: j.first_start for j in run.jobs}
    assert first[3] == 50
    assert first[2] == 60


def test_capacity_holds_new_jobs_beyond_quota_and_reclaims() -> None:
    tenants = [
        Tenant("a", cohort="c", nominal={"gpu": 2}),
        Tenant("b", cohort="c", nominal={"gpu": 2}),
    ]
    daemon = Daemon([PolicyConfig("capacity")], tenants, hold_new=True)
    jobs = [job(k, 0, 100, account="a") for k in range(1, 5)]  # a borrows all four cards
    jobs += [job(5, 10, 10, account="b", gpus=2)]  # b wants its guarantee back
    run = QueueSim(NODES, jobs, daemon, cycle_s=1).run()
    by_id = {j.job_id: j for j in run.jobs}
    assert by_id[5].first_start is not None
    assert by_id[5].first_start < 20  # reclaimed within a few cycles, not after 100 s
    assert daemon.requeued >= 1
    assert sum(j.restarts for j in run.jobs) == daemon.requeued
    assert all(j.state == "COMPLETED" for j in run.jobs)


def test_snapshot_describes_the_virtual_cluster() -> None:
    sim = QueueSim(NODES, [job(1, 0, 10, milli=300)], None)
    sim.run()
    assert demand_of(sim.jobs[0]).shards == 10  # 300 milli -> ceil(9.6) shards
    infos = node_infos(sim)
    assert [n.card_used for n in infos] == [(0, 0), (0, 0)]
    assert infos[0].cpus == 16


def test_jain_and_waits() -> None:
    assert metrics.jain([1, 1, 1]) == 1
    assert metrics.jain([1, 0, 0]) == pytest.approx(1 / 3)
    assert math.isnan(metrics.jain([]))
    jobs = [job(1, 0, 10), job(2, 0, 10), job(3, 0, 10, qos="low")]
    for j, start in zip(jobs, (0, 4, None), strict=True):
        j.first_start = start
    waits = metrics.waits(jobs, lambda j: j.qos)
    assert waits["normal"]["mean_s"] == 2
    assert waits["low"]["unstarted"] == 1


def test_overload_allocation_counts_only_overloaded_time() -> None:
    samples = [Sample(0, 1, 1), Sample(10, 2, 5), Sample(20, 4, 6), Sample(30, 1, 1)]
    run = QueueRun([], samples, 4.0, 0, 30)
    alloc, span = metrics.overload_allocation(run)
    assert span == 20
    assert alloc == pytest.approx(100 * (2 * 10 + 4 * 10) / (4 * 20))
    assert len(metrics.series(run, points=2)) == 2


def test_service_ratio() -> None:
    a = job(1, 0, 10)
    a.first_start, a.end, a.gpu, a.runs = 5, 15, 1.0, [(5, 15)]
    assert metrics.service_ratio([a], lambda j: j.account) == {"a": pytest.approx(10 / 15)}


def test_unpinned_work_by_weight_packs_onto_the_fuller_node() -> None:
    """A share lands on n1 card 0; by Weight the next whole card goes to the fuller n1 (card
    1), the one after to n2, which has the only whole card left, as slurmctld does with the
    daemon's node weights."""
    jobs = [job(1, 0, 100, milli=500), job(2, 1, 100), job(3, 2, 100)]
    sim = QueueSim(NODES, jobs, None, unpinned="weight")
    sim.run()
    assert [(j.node, j.cards) for j in sim.jobs] == [(0, (0,)), (0, (1,)), (1, (0,))]


def test_unpinned_must_be_known() -> None:
    with pytest.raises(ValueError, match="unpinned must be one of scorer, weight"):
        QueueSim(NODES, [job(1, 0, 1)], None, unpinned="random")
