"""Controller high availability: a primary and two backup slurmctld on one shared state
directory. Stopping the primary lets a backup take over with no job lost, AIPool's client
keeps working through the SlurmctldHost list, and the controllers can be taken down one at a
time for maintenance.

The test brings up its own lab (``--controllers 3``, the small second-cluster inventory, at
the lab under test's port offset +80, in its own directory) and takes it down at the end.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aipool.lab.cluster import Lab
from aipool.lab.config import MEMBER_INVENTORY
from slurm_plugins.client import JobUpdate, SlurmClient, SlurmError
from tests.integration.conftest import side_lab, wait_job, wait_until

pytestmark = pytest.mark.slurm
SLEEP = "#!/bin/bash\nsleep 600\n"
IN_CONTROL = "Running as primary controller"


@pytest.fixture(scope="module")
def ha_lab(lab: Lab) -> Iterator[Lab]:
    with side_lab(lab, "ha", "ha", 80, inventory=MEMBER_INVENTORY, controllers=3) as ha:
        yield ha


@pytest.fixture
def client(ha_lab: Lab) -> Iterator[SlurmClient]:
    client = SlurmClient(env=ha_lab.cfg.env(), timeout=60)
    yield client
    ha_lab.heal_controllers()  # whatever a test stopped (or left hanging) comes back
    left = [j.job_id for j in client.jobs()]
    if left:
        client.cancel(left)
        wait_until(lambda: not client.jobs(), 30)


def workload(client: SlurmClient) -> dict[int, str]:
    """Two running CPU jobs and two pending ones (the CPU node is full); id -> state."""
    opts = ["--partition=cpu", "--cpus-per-task=8", "--output=/dev/null"]
    ids = [client.submit(SLEEP, opts) for _ in range(4)]
    for job_id in ids[:2]:
        wait_job(client, job_id, lambda j: j.is_running, 30)
    states = {j.job_id: j.state.value for j in client.jobs()}
    assert sorted(states.values()) == ["PENDING", "PENDING", "RUNNING", "RUNNING"]
    # every job has its record in slurmdbd before a controller goes: a job whose record was
    # still being asked for when its controller saved its state keeps 22.05's "being set"
    # mark in the state the next controller loads, which never asks again while the job
    # pends, so it refuses every update of that job (slurmctld's job_mgr.c loads db_index
    # as saved, and its db_inx thread skips any job whose index is not 0)
    wait_until(lambda: {r.job_id for r in client.accounting(job_ids=ids)} == set(ids), 30)
    return states


def test_three_controllers_see_themselves_as_three_hosts(ha_lab: Lab, client: SlurmClient) -> None:
    ctlds = client.controllers()
    assert [(c.role, c.host, c.up) for c in ctlds] == [
        ("primary", "ha-ctl1", True),
        ("backup1", "ha-ctl2", True),
        ("backup2", "ha-ctl3", True),
    ]
    conf = ha_lab.cfg.slurm_conf.read_text()
    assert "SlurmctldHost=ha-ctl2(127.0.2.2)" in conf
    # each in its own UTS namespace: the host's name and /etc/hosts are untouched
    assert Path("/proc/sys/kernel/hostname").read_text().strip() != "ha-ctl1"
    assert "ha-ctl1" not in Path("/etc/hosts").read_text()


def test_primary_stops_backup_takes_over_and_no_job_is_lost(
    ha_lab: Lab, client: SlurmClient
) -> None:
    before = workload(client)
    stopped = time.monotonic()
    assert ha_lab.stop_controller(1)
    # the client's next read blocks until a backup has taken control, then answers
    after = {j.job_id: j.state.value for j in client.jobs()}
    failover = time.monotonic() - stopped
    assert after == before
    ctlds = client.controllers()
    assert [c.up for c in ctlds] == [False, True, True]
    assert not ha_lab.is_up()
    assert failover < 30
    log = (ha_lab.cfg.log / "slurmctld-2.log").read_text()
    assert "ha-ctl2 taking over" in log
    # writes go to the backup too: a new job is accepted and started
    new = client.submit(SLEEP, ["--partition=gpu", "--gres=gpu:a100:1", "--output=/dev/null"])
    wait_job(client, new, lambda j: j.is_running, 30)
    # the primary comes back and takes control again, with every job
    settle(ha_lab, client, before)
    ha_lab.start_controller(1)
    wait_until(lambda: client.controllers()[0].up, 60)  # a backup may take 30 s to let go
    assert ha_lab.is_up()
    final = {j.job_id: j.state.value for j in client.jobs()}
    assert {k: final[k] for k in before} == before
    assert final[new] == "RUNNING"


def test_controllers_down_one_at_a_time_for_maintenance(ha_lab: Lab, client: SlurmClient) -> None:
    before = workload(client)
    for index in (1, 2, 3):
        if index == 1:
            # hand over first (no wait for SlurmctldTimeout): the backup takes control and
            # the primary saves its state and exits
            took = _log(ha_lab, 2).count(IN_CONTROL)
            client.takeover(1)
            wait_until(lambda took=took: _log(ha_lab, 2).count(IN_CONTROL) > took, 30)
            wait_until(lambda: not ha_lab.controller_running(1), 30)
            settle(ha_lab, client, before)  # before the primary asks for control back
        else:
            assert ha_lab.stop_controller(index)
        assert {j.job_id: j.state.value for j in client.jobs()} == before
        ha_lab.start_controller(index)
        wait_until(lambda i=index: client.controllers()[i - 1].up, 60)
    assert ha_lab.is_up()
    assert {j.job_id: j.state.value for j in client.jobs()} == before


def settle(lab: Lab, client: SlurmClient, jobs: dict[int, str]) -> None:
    """Change a pending job; wait until the controller in charge has written its state.

    A controller that has only just taken over may refuse a write for a moment: the update
    is tried again until it lands (within 30 s), and a failure names Slurm's last reason.
    """
    mark = time.time()
    pending = min(k for k, v in jobs.items() if v == "PENDING")
    refused: list[str] = []

    def update() -> bool:
        try:
            client.update_jobs([JobUpdate(pending, site_factor=int(mark) % 1000 + 1)])
        except SlurmError as exc:
            refused.append(str(exc))
            return False
        return True

    try:
        # a backup that has just taken over refuses updates until slurmdbd has given it the
        # jobs' database indexes ("the DB index is being set"): slower on a busy host
        wait_until(update, 90, interval=1)
    except AssertionError:
        raise AssertionError(f"job {pending} could not be updated: {refused[-1]}") from None
    # a backup that has just taken over starts its state-save thread late, later still on a
    # busy host (24.11 in CI beside the Debian 12 suite took over 30 s once)
    lab.wait_state_saved(mark, timeout=90)


def _log(lab: Lab, index: int) -> str:
    path = lab.cfg.log / ("slurmctld.log" if index == 1 else f"slurmctld-{index}.log")
    return path.read_text(errors="replace") if path.exists() else ""
