"""Elastic nodes on a lab of their own (aipool/lab/elastic.yaml: gpu1 and npu1 always up,
egpu1, egpu2 in `gpu` and enpu1 in `npu` power-saved; elastic-power.yaml: SuspendTime 20 s).

The power-saved nodes start powered down (``idle~``). A burst of GPU jobs and an NPU job
has Slurm resume them through AIPool's resume program (the lab driver starts their slurmd
through the lab's sudo rule), and the jobs run there; idle again, the nodes are suspended
(``%`` then ``~``). A node whose resume fails (listed in the lab's refuse file) goes DOWN
with the program's reason, and its job runs on another node. The programs' event log gives
the energy saved.

The module brings up its own lab (the lab under test's port offset +240, in its own
directory) and takes it down at the end. The programs run from the job runtime, which
`aipool lab services up` brings up to date with the checkout.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from aipool.lab.cluster import Lab
from aipool.lab.config import ELASTIC_INVENTORY, ELASTIC_POWER
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.models import JobState
from slurm_plugins.power.config import load_config
from slurm_plugins.power.plan import Power, energy_saved
from slurm_plugins.power.program import read_events
from tests.integration.conftest import side_lab, wait_job, wait_until

pytestmark = pytest.mark.slurm
SHIFT = 240  # the side lab's ports: clear of the shared lab and of the other side labs
ELASTIC = ("egpu1", "egpu2", "enpu1")
GPUS = ["--partition=gpu", "--gres=gpu:2", "--output=/dev/null", "--chdir=/tmp"]
NPUS = ["--partition=npu", "--gres=npu:910b:2", "--output=/dev/null", "--chdir=/tmp"]


def sleep(seconds: int) -> str:
    return f"#!/bin/bash\nsleep {seconds}\n"


@pytest.fixture(scope="module")
def elastic_lab(lab: Lab) -> Iterator[Lab]:
    with side_lab(
        lab, "elastic", "elastic", SHIFT, inventory=ELASTIC_INVENTORY, power=ELASTIC_POWER
    ) as side:
        yield side


@pytest.fixture
def client(elastic_lab: Lab) -> Iterator[SlurmClient]:
    client = SlurmClient(env=elastic_lab.cfg.env(), timeout=30)
    yield client
    left = [j.job_id for j in client.jobs()]
    if left:
        client.cancel(left)
        wait_until(lambda: not client.jobs(), 30)


def powers(client: SlurmClient) -> dict[str, Power]:
    return {n: Power.of_sinfo(s) for n, s in client.node_states().items()}


def test_burst_resumes_then_idle_suspends(elastic_lab: Lab, client: SlurmClient) -> None:
    states = client.node_states()
    assert all(states[n].endswith("~") for n in ELASTIC), states
    assert "~" not in states["gpu1"]
    assert "~" not in states["npu1"]

    jobs = [client.submit(sleep(8), [*GPUS, f"--job-name=burst{i}"]) for i in range(3)]
    # the NPU job asks for the power-saved Ascend node by name (npu1 would take it at once)
    jobs.append(client.submit(sleep(8), [*NPUS, "--job-name=burst-npu", "--nodelist=enpu1"]))
    seen: set[tuple[str, Power]] = set()
    ran_on: dict[int, str] = {}
    waited_for_node: set[str] = set()

    def all_ran() -> bool:
        seen.update(powers(client).items())
        for job in client.jobs():  # a job that ran on gpu1 may be over before the others
            if job.job_id not in jobs:
                continue
            if job.state is JobState.CONFIGURING:
                waited_for_node.add(job.nodes)
            if job.state is JobState.RUNNING:
                ran_on[job.job_id] = job.nodes
        return len(ran_on) == len(jobs)

    # a job on a resumed node leaves CONFIGURING at slurmctld's next periodic check (<= 30 s)
    wait_until(all_ran, 60, interval=0.2)
    assert sorted(ran_on.values()) == sorted(["gpu1", *ELASTIC])
    # while their nodes came up, the jobs read CONFIGURING on both releases (24.11 lists it
    # as a flag beside RUNNING), not yet RUNNING
    assert waited_for_node & set(ELASTIC), waited_for_node
    # on their way up, sinfo marked them powering up (#); now they are plainly up
    assert {(n, Power.POWERING_UP) for n in ELASTIC} <= seen, seen
    # 24.11 may start the jobs a moment before it clears the node's powering-up mark
    wait_until(lambda: all(powers(client)[n] is Power.ON for n in ELASTIC), 30)

    # idle for SuspendTime (20 s) after the jobs end: powered down again, through %
    def suspended() -> bool:
        now = powers(client)
        seen.update(now.items())
        return all(now[n] is Power.OFF for n in ELASTIC)

    # the jobs' 8 s count from when slurmctld sees their node up (24.11: at its periodic
    # check, up to 30 s after the resume), then SuspendTime
    wait_until(suspended, 100, interval=0.5)
    assert {(n, Power.POWERING_DOWN) for n in ELASTIC} & seen, seen
    assert powers(client)["gpu1"] is Power.ON  # always up: never suspended
    assert powers(client)["npu1"] is Power.ON

    # the programs recorded it: each elastic node up once, then down; the energy follows
    cfg = load_config(elastic_lab.cfg.etc / "power.yaml")
    assert cfg.events is not None
    events = list(read_events(cfg.events))
    for node in ELASTIC:
        kinds = [e.kind.value for e in events if e.node == node]
        assert kinds[:2] == ["resume", "suspend"], kinds
    time.sleep(1)  # at least a second powered down to show
    saved = {r.node: r for r in energy_saved(events, cfg, since=0, until=time.time())}
    assert set(saved) >= set(ELASTIC)
    assert all(saved[n].kwh > 0 for n in ELASTIC)
    assert saved["egpu1"].watts == 250
    assert saved["enpu1"].watts == 310  # its own figure (elastic-power.yaml)


def test_failed_resume_downs_the_node_and_the_job_runs_elsewhere(
    elastic_lab: Lab, client: SlurmClient
) -> None:
    elastic_lab.cfg.power_refuse.write_text("egpu1\n")
    try:
        busy = client.submit(sleep(15), [*GPUS, "--job-name=busy", "--nodelist=gpu1"])
        wait_job(client, busy, lambda j: j.state.value == "RUNNING", 30)
        # gpu1 is busy and egpu2 excluded: Slurm resumes egpu1 for it, which fails
        job = client.submit(sleep(5), [*GPUS, "--job-name=moved", "--exclude=egpu2"])

        def egpu1_down() -> bool:
            node = next(n for n in client.nodes() if n.name == "egpu1")
            return node.state.value == "DOWN"

        wait_until(egpu1_down, 40, interval=0.3)
        node = next(n for n in client.nodes() if n.name == "egpu1")
        assert node.reason.startswith("power: resume failed: sudo exited 1"), node.reason
        assert "egpu1 does not power on" in node.reason
        assert client.node_states()["egpu1"].startswith("down")
        ran = wait_job(client, job, lambda j: j.state.value in ("RUNNING", "COMPLETED"), 60)
        assert ran.nodes == "gpu1"
    finally:
        elastic_lab.cfg.power_refuse.unlink(missing_ok=True)
