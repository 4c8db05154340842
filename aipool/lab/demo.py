"""The lab's demo workload: a whole GPU, two jobs sharing one card by shards, an NPU job."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from aipool.lab.cluster import Lab
from aipool.lab.daemons import LabError
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.models import Job, Node

PROBE_SCRIPT = """#!/bin/bash
set -euo pipefail
echo "node=${SLURMD_NODENAME} job=${SLURM_JOB_ID} user=$(id -un)"
echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-}"
echo "SLURM_SHARDS_ON_NODE=${SLURM_SHARDS_ON_NODE:-}"
echo "ASCEND_RT_VISIBLE_DEVICES=${ASCEND_RT_VISIBLE_DEVICES:-}"
sleep "${DEMO_SECONDS:-8}"
"""


@dataclass(frozen=True, slots=True)
class DemoJob:
    title: str
    user: str
    options: tuple[str, ...]


DEMO_JOBS = (
    DemoJob("whole GPU", "alice", ("--partition=gpu", "--gres=gpu:a100:1")),
    DemoJob(
        "1/2 GPU (16/32 shards)", "bob", ("--partition=gpu", "--nodelist=gpu2", "--gres=shard:16")
    ),
    DemoJob(
        "1/2 GPU (16/32 shards)", "carol", ("--partition=gpu", "--nodelist=gpu2", "--gres=shard:16")
    ),
    DemoJob("2 Ascend NPUs", "dave", ("--partition=npu", "--gres=npu:910b:2")),
)


def run_demo(lab: Lab, *, wait: bool, echo: Callable[[str], None]) -> list[int]:
    if not lab.is_up():
        raise LabError("the lab is not up: run `aipool lab up` first")
    client, out_dir = lab.client, lab.cfg.jobs
    ids = []
    for dj in DEMO_JOBS:
        opts = (
            *dj.options,
            f"--job-name=demo-{dj.user}",
            f"--chdir={out_dir}",
            f"--output={out_dir}/%x-%j.out",
            "--time=5",
            "--cpus-per-task=1",
        )
        job_id = client.submit(PROBE_SCRIPT, opts, as_user=dj.user)
        ids.append(job_id)
        echo(f"submitted {job_id:>5}  {dj.user:<6} {dj.title}")
    _wait(client, ids, lambda js: all(j.state.value != "PENDING" for j in js), 30)
    console = Console()
    console.print(nodes_table(client.nodes()))
    console.print(queue_table([j for j in client.jobs() if j.job_id in ids]))
    if not wait:
        return ids
    _wait(client, ids, lambda js: not js, 120)
    for job_id, dj in zip(ids, DEMO_JOBS, strict=True):
        path = out_dir / f"demo-{dj.user}-{job_id}.out"
        lines = path.read_text().splitlines() if path.exists() else ["(no output)"]
        echo(f"--- job {job_id} ({dj.title}) ---")
        for line in lines:
            echo(f"    {line}")
    return ids


def _wait(
    client: SlurmClient, ids: list[int], done: Callable[[list[Job]], bool], timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if done([j for j in client.jobs() if j.job_id in ids]):
            return
        time.sleep(0.5)
    raise LabError(f"demo jobs {ids} did not progress within {timeout:g} s")


def nodes_table(nodes: list[Node]) -> Table:
    t = Table(title="nodes (sinfo)")
    for col in ("node", "state", "partitions", "cpus used", "gres used / total"):
        t.add_column(col)
    for n in nodes:
        kinds = dict.fromkeys(g.name for g in n.gres)
        gres = ", ".join(f"{k} {n.gres_in_use(k)}/{n.gres_total(k)}" for k in kinds)
        state = n.state.value.lower() + "".join(f"+{f.lower()}" for f in sorted(n.flags))
        t.add_row(n.name, state, ",".join(n.partitions), f"{n.alloc_cpus}/{n.cpus}", gres or "-")
    return t


def queue_table(jobs: list[Job]) -> Table:
    t = Table(title="queue (squeue)")
    for col in ("job", "user", "account", "partition", "state", "node", "gres", "reason"):
        t.add_column(col)
    for j in jobs:
        t.add_row(
            str(j.job_id),
            j.user,
            j.account,
            j.partition,
            j.state.value.lower(),
            j.nodes or "-",
            j.gres_request or "-",
            j.reason if j.is_pending else "",
        )
    return t
