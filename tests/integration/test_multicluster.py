"""Two lab clusters sharing one slurmdbd: the first level sends a job to the cluster that has
room of its kind, and accounting keeps the cluster on every record.

The test brings up its own two-cluster lab (beside the lab under test, at its port offset
+40 and +70, in its own directory) and takes it down at the end.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from aipool.lab.cluster import Lab
from jobspec.cli import COMMANDS, Settings
from slurm_plugins.client import SlurmClient
from slurm_plugins.federation.cli import clusters
from tests.integration.conftest import side_lab, wait_job, wait_until

pytestmark = pytest.mark.slurm
SLEEP = "#!/bin/bash\nsleep 300\n"


@pytest.fixture(scope="module")
def mc_lab(lab: Lab) -> Iterator[Lab]:
    with side_lab(lab, "multicluster", "mc", 40, clusters=2) as mc:
        yield mc


@pytest.fixture
def mc(mc_lab: Lab) -> Iterator[SlurmClient]:
    client = SlurmClient(env=mc_lab.cfg.env(), timeout=30)
    yield client
    for name in ("mc", "mc2"):
        on = client.on(name)
        left = [j.job_id for j in on.jobs()]
        if left:
            on.cancel(left)
            wait_until(lambda on=on: not on.jobs(), 30)


@click.group()
def cli() -> None:
    """The commands ``aipool`` mounts for jobs and clusters."""


cli.add_command(clusters)
for command in COMMANDS:
    cli.add_command(command)


def aipool(lab: Lab, tmp_path: Path, *args: str) -> Result:
    """``aipool ARGS`` in this process, against the test's lab (default federation policy)."""
    obj = {
        "slurm_client": SlurmClient(env=lab.cfg.env(), timeout=30),
        "jobspec_settings": Settings(state_dir=tmp_path / "state"),
    }
    env = {"AIPOOL_FEDERATION_POLICY": ""}
    return CliRunner().invoke(cli, list(args), obj=obj, env=env, catch_exceptions=False)


def test_both_clusters_share_one_slurmdbd(mc_lab: Lab, mc: SlurmClient) -> None:
    assert mc.clusters() == ["mc", "mc2"]
    assert {n.name for n in mc.on("mc2").nodes()} == {"bgpu1", "bcpu1"}
    assert {"gpu1", "gpu2", "cpu1"} <= {n.name for n in mc.on("mc").nodes()}
    assocs = {(a.cluster, a.account, a.user) for a in mc.associations() if a.user}
    assert {("mc", "nlp", "alice"), ("mc2", "nlp", "alice")} <= assocs
    status = mc_lab.status()
    assert status["clusters"] == ["mc", "mc2"]
    assert status["daemons"]["mc2/slurmctld"]["running"]


def test_a_job_without_a_cluster_lands_where_its_kind_has_room(
    mc_lab: Lab, mc: SlurmClient, tmp_path: Path
) -> None:
    first = mc.on("mc")
    fill = [
        first.submit(SLEEP, ["--partition=gpu", "--gres=gpu:a100:4", "--output=/dev/null"])
        for _ in range(2)
    ]
    for job_id in fill:
        wait_job(first, job_id, lambda j: j.is_running, 30)
    # every A100 of the first cluster is taken: the second still has four
    spec = tmp_path / "train.yaml"
    spec.write_text(
        f"name: train\ncommand: sleep 300\nworkdir: {mc_lab.cfg.jobs}\n"
        f"resources: {{gpus: 2, gpu_type: a100}}\n"
    )
    done = aipool(mc_lab, tmp_path, "submit", "--cluster", "auto", str(spec))
    assert done.exit_code == 0, done.output
    assert "cluster mc2 (gpu, starts now)" in done.output
    gpu_job = int(done.stdout.split()[0])
    job = wait_job(mc.on("mc2"), gpu_job, lambda j: j.is_running, 30)
    assert job.nodes == "bgpu1"
    assert job.cluster == "mc2"
    # a CPU job has room on both; the first cluster has more free CPUs (spread)
    spec.write_text(f"name: prep\ncommand: sleep 300\nworkdir: {mc_lab.cfg.jobs}\n")
    done = aipool(mc_lab, tmp_path, "submit", "--cluster", "auto", str(spec))
    assert done.exit_code == 0, done.output
    assert "cluster mc (cpu, starts now)" in done.output
    cpu_job = int(done.stdout.split()[0])
    assert wait_job(first, cpu_job, lambda j: j.is_running, 30).cluster == "mc"
    # the CLI lists both clusters' queues
    listed = aipool(mc_lab, tmp_path, "jobs", "--cluster", "all", "--all")
    assert listed.exit_code == 0, listed.output
    rows = {(r.split()[0], r.split()[1]) for r in listed.stdout.splitlines()[1:]}
    assert {(str(gpu_job), "mc2"), (str(cpu_job), "mc")} | {(str(j), "mc") for j in fill} <= rows
    shown = aipool(mc_lab, tmp_path, "clusters")
    assert "mc: 3 running, 0 pending" in shown.output
    assert "mc2: 1 running, 0 pending" in shown.output

    # accounting: one slurmdbd, and every record carries its cluster
    mc.on("mc2").cancel([gpu_job])
    wait_until(lambda: mc.on("mc2").accounting(job_ids=[gpu_job]) != [], 30)
    (rec,) = mc.on("mc2").accounting(job_ids=[gpu_job])
    assert rec.cluster == "mc2"
    wanted = {("mc2", str(gpu_job))} | {("mc", str(j)) for j in (*fill, cpu_job)}
    # slurmctld reports job starts to slurmdbd asynchronously: poll until all are recorded
    wait_until(lambda: wanted <= sacct_all(mc_lab), 30)


def sacct_all(lab: Lab) -> set[tuple[str, ...]]:
    """``(cluster, job id)`` of every record ``sacct -M all`` lists."""
    done = subprocess.run(
        ["sacct", "-M", "all", "-X", "-n", "-P", "-o", "cluster,jobid", "--allusers"],
        env={**os.environ, **lab.cfg.env()},
        capture_output=True,
        text=True,
        check=True,
    )
    return {tuple(line.split("|")) for line in done.stdout.splitlines()}
