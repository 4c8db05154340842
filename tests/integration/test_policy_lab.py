"""The policy daemon on the real lab: preemption, fair share, capacity reclaim, gangs.

Each test pins its jobs to the few devices it needs (npu2's 1/2 vNPUs, npu1's NPUs) and
steers only its own jobs (a unique name prefix), so it does not disturb other tests.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aipool.lab.cluster import Lab
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.models import JobState
from tests.integration.conftest import wait_until
from tests.integration.test_policy_support import Harness, harness

pytestmark = pytest.mark.slurm


@pytest.fixture
def h(lab: Lab, client: SlurmClient, tmp_path: Path) -> Iterator[Harness]:
    yield from harness(lab, client, tmp_path)


RUNNING, PENDING = JobState.RUNNING, JobState.PENDING


def held(h: Harness, job_id: int) -> bool:
    j = h.job(job_id)
    return j is not None and j.held


def started(h: Harness, job_id: int) -> float:
    j = h.job(job_id)
    assert j is not None
    assert j.start_time is not None
    return j.start_time.timestamp()


HALF_VNPUS = ("-p", "npu", "-w", "npu2")  # npu2 has two 1/2 vNPUs: a tiny, private pool


def test_high_preempts_low_and_low_comes_back(h: Harness) -> None:
    d = h.daemon([{"name": "priority", "weight": 2}, {"name": "fair"}])
    low = h.submit("low", *HALF_VNPUS, "--gres=npu:910b_vir10:2", "--qos=low")
    h.drive(d, lambda: h.state(low) is RUNNING, 60)
    high = h.submit("high", *HALF_VNPUS, "--gres=npu:910b_vir10:1", "--qos=high", seconds=8)
    h.drive(d, lambda: h.state(high) is RUNNING, 60)
    low_job = h.job(low)
    assert low_job is not None
    assert low_job.state is PENDING
    # the high job ends; the low one must come back (the daemon never holds it)
    h.drive(d, lambda: h.state(low) is RUNNING, 90)
    back = h.job(low)
    assert back is not None
    assert back.restart_count >= 1
    assert not any(r.plan.holds for r in h.reports)


def test_fair_light_tenant_overtakes_heavy_user(h: Harness) -> None:
    # bob (vision) uses the NPUs for a while: recent, heavy use
    heavy = [
        h.submit(f"heavy{i}", "-p", "npu", "-w", "npu1", "--gres=npu:910b:4", user="bob", seconds=6)
        for i in range(2)
    ]
    wait_until(lambda: all(h.state(j) in (None, JobState.COMPLETED) for j in heavy), 120)
    # NPU use alone decides: the suite's other tests run GPU and CPU work as carol (cs101)
    # within the usage window, which must not outweigh vision's NPU use here
    only_npus = {"npu": 1.0, "gpu": 0.0, "cpu": 0.0, "mem": 0.0}
    d = h.daemon([{"name": "fair", "args": {"half_life": "10m", "weights": only_npus}}])
    blocker = h.submit("blocker", *HALF_VNPUS, "--gres=npu:910b_vir10:2")
    h.drive(d, lambda: h.state(blocker) is RUNNING, 60)
    bob = h.submit("bob", *HALF_VNPUS, "--gres=npu:910b_vir10:2", user="bob")
    carol = h.submit("carol", *HALF_VNPUS, "--gres=npu:910b_vir10:2", user="carol")
    try:
        h.drive(
            d,
            lambda: bool(h.reports[-1].plan.order) and h.reports[-1].plan.order[:2] == (carol, bob),
            60,
        )
    except AssertionError as e:
        last = h.reports[-1].plan if h.reports else None
        said = {j: last.reasons.get(j) for j in (carol, bob)} if last else {}
        raise AssertionError(f"{e}; last order {last and last.order}, reasons {said}") from e
    h.client.cancel([blocker])
    h.drive(d, lambda: h.state(carol) is RUNNING, 60)
    assert h.state(bob) is PENDING  # submitted first, but vision used far more


def test_capacity_borrowed_work_is_preemptible_reclaimed_and_comes_back(h: Harness) -> None:
    tenants = {
        "nlp": {"cohort": "research", "nominal": {"npu": 4}},
        "vision": {"cohort": "research", "nominal": {"npu": 4}},
    }
    d = h.daemon([{"name": "capacity"}, {"name": "priority"}], tenants=tenants)
    npu1 = ("-p", "npu", "-w", "npu1", "--gres=npu:910b:4")
    # vision's work waits for the daemon's verdict (submitted held, label `admit`)
    own = h.submit("vision-own", *npu1, user="bob", hold=True, labels="admit=capacity")
    h.drive(d, lambda: h.state(own) is RUNNING, 60)
    borrowed = h.submit("vision-borrowed", *npu1, user="bob", hold=True, labels="admit=capacity")
    h.drive(d, lambda: h.state(borrowed) is RUNNING, 60)
    assert qos_of(h, own) == "normal"  # within its guarantee: its own QOS
    assert qos_of(h, borrowed) == "low"  # borrowing: moved to the preemptible QOS first
    assert any(
        "tenant vision over guarantee by 4 npu, borrowing in QOS low" in r
        for x in h.reports
        for r in x.plan.reasons.get(borrowed, ())
    )
    # nlp submits within its guarantee: slurmctld preempts (requeues) the borrowed job by
    # itself, before the daemon's next cycle
    t0 = time.monotonic()
    owner = h.submit("nlp-owner", *npu1, user="alice", seconds=12)
    wait_until(lambda: h.state(owner) is RUNNING, 60)
    print(f"\ncapacity: owner's job running {time.monotonic() - t0:.1f} s after submission")
    back = h.job(borrowed)
    assert back is not None
    assert back.state is PENDING
    assert back.restart_count >= 1
    own_job = h.job(own)
    assert own_job is not None
    assert own_job.state is RUNNING  # within its guarantee: never touched
    assert own_job.restart_count == 0
    # the reclaimed job waits, held by capacity, while the cohort has no quota left ...
    h.drive(d, lambda: held(h, borrowed), 30)
    assert any(
        "capacity: cohort research has 0 npu of quota left" in r
        for r in h.reports[-1].plan.reasons.get(borrowed, ())
    )
    # ... and comes back once the owner's job is done, still preemptible
    h.drive(d, lambda: h.state(borrowed) is RUNNING, 90)
    assert qos_of(h, borrowed) == "low"
    assert h.state(own) is RUNNING


def qos_of(h: Harness, job_id: int) -> str:
    j = h.job(job_id)
    assert j is not None
    return j.qos


def test_gang_of_three_starts_together_or_not_at_all(h: Harness) -> None:
    d = h.daemon([{"name": "gang"}, {"name": "fifo"}])
    npu1 = ("-p", "npu", "-w", "npu1")
    # too big together (3 x 4 of 8 NPUs): none may start
    big = [
        h.submit(f"big{i}", *npu1, "--gres=npu:910b:4", hold=True, labels="gang=big,gang_size=3")
        for i in range(3)
    ]
    for _ in range(3):
        d.cycle()
    assert all(held(h, j) for j in big)
    h.client.cancel(big)
    # a gang that fits: two members wait for the third, then all start in one release
    ok = [
        h.submit(f"ok{i}", *npu1, "--gres=npu:910b:2", hold=True, labels="gang=ok,gang_size=3")
        for i in range(2)
    ]
    wait_until(lambda: all(h.state(j) in (None, JobState.CANCELLED) for j in big), 30)
    for _ in range(2):
        report = d.cycle()
        assert report is not None
        assert not report.plan.releases
    ok.append(h.submit("ok2", *npu1, "--gres=npu:910b:2", hold=True, labels="gang=ok,gang_size=3"))
    h.drive(d, lambda: all(h.state(j) is RUNNING for j in ok), 60)
    starts = [started(h, j) for j in ok]
    assert max(starts) - min(starts) <= 5  # one release, one scheduling pass
    releases = [r for r in h.reports if r.plan.releases]
    assert len(releases) == 1
    assert {x.job_id for x in releases[0].plan.releases} == set(ok)
