"""Topology-aware placement on a lab whose inventory names two leaf switches
(gres/examples/switches.yaml: tgpu1 and tgpu3 under leaf1, tgpu2 and tgpu4 under leaf2).

The lab renders topology.conf and ``TopologyPlugin=topology/tree`` from the inventory. A
2-node ``same_switch`` job (rendered by jobspec: ``--switches=1@0:10:00``) waits while the
free nodes span both switches and a plain 2-node job submitted right after it runs at once
across them; when a switch has room it lands under that one switch.

The test brings up its own lab (at the lab under test's port offset +360, in its own
directory) and takes it down at the end.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace

import pytest

from aipool.lab.cluster import Lab
from aipool.lab.config import DEFAULT_INVENTORY
from gres.hostlist import expand_hostlist
from gres.inventory import load_inventory
from jobspec.render import render
from jobspec.schema import load_spec
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.job import Switches
from tests.integration.conftest import side_lab, wait_job, wait_until

pytestmark = pytest.mark.slurm
INVENTORY = DEFAULT_INVENTORY.parent / "switches.yaml"
SHIFT = 360  # the side lab's ports: clear of the shared lab and of the other side labs
SLEEP = "#!/bin/bash\nsleep 600\n"
WHOLE = ["--partition=gpu", "--exclusive", "--output=/dev/null"]


@pytest.fixture(scope="module")
def topo_lab(lab: Lab) -> Iterator[Lab]:
    with side_lab(lab, "topology", "topo", SHIFT, inventory=INVENTORY) as side:
        yield side


@pytest.fixture
def client(topo_lab: Lab) -> Iterator[SlurmClient]:
    client = SlurmClient(env=topo_lab.cfg.env(), timeout=30)
    yield client
    left = [j.job_id for j in client.jobs()]
    if left:
        client.cancel(left)
        wait_until(lambda: not client.jobs(), 30)


def leaf_of(node: str) -> str | None:
    return load_inventory(INVENTORY).topology.leaf_of(node)


def test_slurm_reads_the_switches_from_the_inventory(topo_lab: Lab, client: SlurmClient) -> None:
    conf = topo_lab.cfg.slurm_conf.read_text()
    assert "TopologyPlugin=topology/tree" in conf.splitlines()
    rendered = (topo_lab.cfg.etc / "topology.conf").read_text()
    assert "SwitchName=leaf1 Nodes=tgpu1,tgpu3\n" in rendered
    shown = subprocess.run(
        ["scontrol", "show", "topology"],
        env={**os.environ, **topo_lab.cfg.env()},
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    switches = [
        dict(w.split("=", 1) for w in line.split() if "=" in w) for line in shown.splitlines()
    ]
    leaves = {
        s["SwitchName"]: set(expand_hostlist(s["Nodes"])) for s in switches if s["Level"] == "0"
    }
    assert leaves == {"leaf1": {"tgpu1", "tgpu3"}, "leaf2": {"tgpu2", "tgpu4"}}
    assert [s["Switches"] for s in switches if s["SwitchName"] == "root"] == ["leaf[1-2]"]


def test_same_switch_waits_for_one_switch_while_plain_work_runs(client: SlurmClient) -> None:
    # one node busy under each switch: the two free ones (tgpu3, tgpu4) span both
    blockers = {
        node: client.submit(SLEEP, [*WHOLE, f"--nodelist={node}", "--time=10"])
        for node in ("tgpu1", "tgpu2")
    }
    for job_id in blockers.values():
        wait_job(client, job_id, lambda j: j.is_running, 30)
    spec = load_spec(
        {
            "name": "allreduce",
            "command": "true",
            "topology": "ddp",
            "resources": {"nodes": 2, "gpus": 1, "time": 5},
            "affinity": {"same_switch": True, "max_wait": "10m"},
        }
    )
    request = replace(render(spec).request, output="/dev/null", workdir="/tmp")
    assert request.components[0].switches == Switches(1, 600)
    together = client.submit(SLEEP, request)
    plain = client.submit(SLEEP, [*WHOLE, "--nodes=2", "--time=2"])
    started = time.monotonic()
    running = wait_job(client, plain, lambda j: j.is_running, 30)
    assert time.monotonic() - started < 30
    assert {leaf_of(n) for n in expand_hostlist(running.nodes)} == {"leaf1", "leaf2"}
    assert client.job(together).state.value == "PENDING"

    # the plain job gone, tgpu3 and tgpu4 are free but under two switches: still waiting
    client.cancel([plain])
    wait_until(lambda: all(j.job_id != plain for j in client.jobs()), 30)
    deadline = time.monotonic() + 6  # several scheduler and backfill passes
    while time.monotonic() < deadline:
        assert client.job(together).state.value == "PENDING"
        time.sleep(0.5)

    # leaf1 gets room (tgpu1 and tgpu3): the job runs there, under one switch
    client.cancel([blockers["tgpu1"]])
    placed = wait_job(client, together, lambda j: j.is_running, 30)
    nodes = expand_hostlist(placed.nodes)
    assert sorted(nodes) == ["tgpu1", "tgpu3"]
    assert {leaf_of(n) for n in nodes} == {"leaf1"}
