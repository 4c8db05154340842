"""The client's writes against the real controller: each one lands, no-ops send nothing."""

from __future__ import annotations

import pytest

from aipool.lab.cluster import Lab
from slurm_plugins.client import JobNotFound, JobUpdate, SlurmClient
from slurm_plugins.client.models import JobState
from slurm_plugins.client.runner import RecordingRunner, SubprocessRunner
from tests.integration.conftest import wait_job, wait_until

pytestmark = pytest.mark.slurm

SLEEP = "#!/bin/bash\nsleep 120\n"


def opts(lab: Lab, *extra: str) -> list[str]:
    return [f"--chdir={lab.cfg.jobs}", "--output=/dev/null", "--time=3", "-p", "cpu", *extra]


def test_hold_release_and_requeue(client: SlurmClient, lab: Lab) -> None:
    job_id = client.submit(SLEEP, opts(lab, "--hold"))
    job = client.job(job_id)
    assert job.held
    assert job.reason == "JobHeldUser"
    client.release([job_id])
    wait_job(client, job_id, lambda j: j.state is JobState.RUNNING, 30)
    client.requeue([job_id], hold=True)
    job = wait_job(client, job_id, lambda j: j.is_pending and j.held, 30)
    assert job.restart_count == 1
    client.cancel([job_id])
    wait_until(lambda: job_id not in {j.job_id for j in client.jobs()}, 30)


def test_batched_job_updates_land_and_no_ops_are_not_sent(client: SlurmClient, lab: Lab) -> None:
    ids = [client.submit(SLEEP, opts(lab, "--begin=now+1hour")) for _ in range(3)]
    recorder = RecordingRunner(SubprocessRunner(lab.cfg.env()))
    rec_client = SlurmClient(recorder, timeout=30)
    sent = rec_client.update_jobs(
        [JobUpdate(i, priority=1000 + n, exc_nodes="gpu1") for n, i in enumerate(ids)]
    )
    assert sent == 3
    assert sum(1 for argv, _ in recorder.calls if argv[:2] == ("scontrol",)) == 1
    jobs = {j.job_id: j for j in client.jobs() if j.job_id in ids}
    assert [jobs[i].priority for i in ids] == [1000, 1001, 1002]
    assert {jobs[i].excluded_nodes for i in ids} == {"gpu1"}
    recorder.calls.clear()
    again = rec_client.update_jobs(
        [JobUpdate(i, priority=1000 + n, exc_nodes="gpu1") for n, i in enumerate(ids)],
        current=jobs,
    )
    assert again == 0
    assert recorder.calls == []


def test_node_weight_and_drain(client: SlurmClient) -> None:
    node = next(n for n in client.nodes() if n.name == "cpu1")
    try:
        assert client.update_node(node, weight=7)
        node = next(n for n in client.nodes() if n.name == "cpu1")
        assert node.weight == 7
        assert not client.update_node(node, weight=7)  # no-op: nothing sent
        client.update_node(node, state="DRAIN", reason="maintenance test")
        node = next(n for n in client.nodes() if n.name == "cpu1")
        assert node.has_state("DRAIN")
        assert not node.available
        assert node.reason == "maintenance test"
    finally:
        client.update_node("cpu1", weight=1, state="RESUME")
    # a resumed node is "not responding" until slurmctld's next ping reaches its slurmd
    wait_until(lambda: next(n for n in client.nodes() if n.name == "cpu1").available, 30)
    assert next(n for n in client.nodes() if n.name == "cpu1").weight == 1


def test_dry_run_changes_nothing(client: SlurmClient, lab: Lab) -> None:
    job_id = client.submit(SLEEP, opts(lab, "--begin=now+1hour"))
    dry = SlurmClient(env=lab.cfg.env(), dry_run=True)
    dry.update_jobs([JobUpdate(job_id, priority=4242)])
    dry.cancel([job_id])
    job = client.job(job_id)
    assert job.priority != 4242
    assert job.is_pending


def test_unknown_job_is_job_not_found(client: SlurmClient) -> None:
    with pytest.raises(JobNotFound):
        client.job(99_999_999)
