"""Jobs on the real lab cluster see exactly the devices Slurm gave them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aipool.lab.cluster import Lab
from slurm_plugins.client import SlurmClient, UnsatisfiableRequest
from slurm_plugins.client.models import Job, JobState
from tests.integration.conftest import wait_job, wait_until

pytestmark = pytest.mark.slurm

PROBE = """#!/bin/bash
set -euo pipefail
echo "NODE=${SLURMD_NODENAME}"
echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-}"
echo "ASCEND_RT_VISIBLE_DEVICES=${ASCEND_RT_VISIBLE_DEVICES:-}"
echo "SLURM_SHARDS_ON_NODE=${SLURM_SHARDS_ON_NODE:-}"
echo READY
sleep "${HOLD:-120}"
"""


def submit(
    client: SlurmClient, lab: Lab, tag: str, *opts: str, hold: int = 120, as_user: str | None = None
) -> int:
    return client.submit(
        PROBE,
        [
            f"--job-name={tag}",
            f"--output={lab.cfg.jobs}/{tag}-%j.out",
            f"--chdir={lab.cfg.jobs}",
            f"--export=ALL,HOLD={hold}",
            "--time=5",
            *opts,
        ],
        as_user=as_user,
    )


def env_of(lab: Lab, tag: str, job_id: int) -> dict[str, str]:
    """Wait for the job to print its environment, then return it."""
    path = Path(f"{lab.cfg.jobs}/{tag}-{job_id}.out")
    wait_until(lambda: path.exists() and "READY" in path.read_text(), 30)
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def running(client: SlurmClient, job_id: int) -> Job:
    return wait_job(client, job_id, lambda j: j.state is JobState.RUNNING, 30)


def idx(job: Job, kind: str) -> str:
    """The device indexes Slurm allocated, from ``gres_detail`` (``gpu:a100:1(IDX:1)``)."""
    for detail in job.gres_detail:
        if detail.startswith(kind):
            m = re.search(r"IDX:([0-9,\-]+)", detail)
            if m:
                return ",".join(_expand(m.group(1)))
    raise AssertionError(f"no {kind} in {job.gres_detail}")


def _expand(spec: str) -> list[str]:
    out: list[str] = []
    for part in spec.split(","):
        a, _, b = part.partition("-")
        out += [str(i) for i in range(int(a), int(b or a) + 1)]
    return out


def test_whole_gpu_job_sees_exactly_its_card(client: SlurmClient, lab: Lab) -> None:
    first = submit(client, lab, "gpu-first", "-p", "gpu", "-w", "gpu1", "--gres=gpu:a100:1")
    running(client, first)
    second = submit(client, lab, "gpu-second", "-p", "gpu", "-w", "gpu1", "--gres=gpu:a100:1")
    job = running(client, second)
    env = env_of(lab, "gpu-second", second)
    assert env["NODE"] == "gpu1"
    assert env["CUDA_VISIBLE_DEVICES"] == idx(job, "gpu")
    first_env = env_of(lab, "gpu-first", first)
    assert first_env["CUDA_VISIBLE_DEVICES"] != env["CUDA_VISIBLE_DEVICES"]
    assert len(env["CUDA_VISIBLE_DEVICES"].split(",")) == 1


def test_two_half_card_jobs_share_the_last_free_card(client: SlurmClient, lab: Lab) -> None:
    # take 7 of the 8 cards whole, leaving one card on gpu2
    fill1 = submit(client, lab, "fill1", "-p", "gpu", "-w", "gpu1", "--gres=gpu:a100:4")
    fill2 = submit(client, lab, "fill2", "-p", "gpu", "-w", "gpu2", "--gres=gpu:a100:3")
    running(client, fill1)
    running(client, fill2)
    halves = [submit(client, lab, f"half{i}", "-p", "gpu", "--gres=shard:16") for i in range(3)]
    wait_until(lambda: sum(client.job(j).state is JobState.RUNNING for j in halves) == 2, 30)
    jobs = {j: client.job(j) for j in halves}
    run = [j for j in halves if jobs[j].state is JobState.RUNNING]
    waiting = [j for j in halves if jobs[j].state is JobState.PENDING]
    assert len(run) == 2
    assert len(waiting) == 1
    # the third waits for the card, not for anything else (the reason is set on the next pass)
    wait_job(client, waiting[0], lambda j: j.reason == "Resources", 15)
    envs = [env_of(lab, f"half{halves.index(j)}", j) for j in run]
    assert {e["NODE"] for e in envs} == {"gpu2"}
    assert envs[0]["CUDA_VISIBLE_DEVICES"] == envs[1]["CUDA_VISIBLE_DEVICES"]
    assert {e["SLURM_SHARDS_ON_NODE"] for e in envs} == {"16"}
    # the card they share is the one the whole-card job did not take
    assert envs[0]["CUDA_VISIBLE_DEVICES"] not in idx(client.job(fill2), "gpu").split(",")
    node = {n.name: n for n in client.nodes()}["gpu2"]
    assert node.gres_in_use("gpu") == 3
    assert node.gres_in_use("shard") == 32


def test_npu_job_sees_its_devices_through_the_ascend_variable(
    client: SlurmClient, lab: Lab
) -> None:
    first = submit(client, lab, "npu-first", "-p", "npu", "--gres=npu:910b:2")
    running(client, first)
    second = submit(client, lab, "npu-second", "-p", "npu", "--gres=npu:910b:3")
    job = running(client, second)
    env = env_of(lab, "npu-second", second)
    assert env["ASCEND_RT_VISIBLE_DEVICES"] == idx(job, "npu")
    assert len(env["ASCEND_RT_VISIBLE_DEVICES"].split(",")) == 3
    assert env["CUDA_VISIBLE_DEVICES"] == ""
    first_env = env_of(lab, "npu-first", first)
    assert not set(first_env["ASCEND_RT_VISIBLE_DEVICES"].split(",")) & set(
        env["ASCEND_RT_VISIBLE_DEVICES"].split(",")
    )


def test_request_the_cluster_cannot_satisfy_is_a_typed_error(client: SlurmClient, lab: Lab) -> None:
    with pytest.raises(UnsatisfiableRequest) as info:
        submit(client, lab, "nope", "-p", "gpu", "--gres=gpu:h100:1")
    assert info.value.argv[0] == "sbatch"
    assert "gres" in info.value.message.lower() or "node configuration" in info.value.message
    with pytest.raises(UnsatisfiableRequest):
        submit(client, lab, "nope", "-p", "gpu", "--gres=gpu:a100:9")


def test_vnpu_jobs_see_their_vnpu_ids(client: SlurmClient, lab: Lab) -> None:
    """npu2 has cards 0-1 whole, card 2 as four 1/4 vNPUs (100-103), card 3 as two 1/2 (104-105)."""
    quarter = submit(client, lab, "vnpu-q", "-p", "npu", "-w", "npu2", "--gres=npu:910b_vir05:2")
    half = submit(client, lab, "vnpu-h", "-p", "npu", "-w", "npu2", "--gres=npu:910b_vir10:1")
    whole = submit(client, lab, "vnpu-w", "-p", "npu", "-w", "npu2", "--gres=npu:910b:2")
    for job_id in (quarter, half, whole):
        running(client, job_id)
    q = env_of(lab, "vnpu-q", quarter)["ASCEND_RT_VISIBLE_DEVICES"].split(",")
    h = env_of(lab, "vnpu-h", half)["ASCEND_RT_VISIBLE_DEVICES"].split(",")
    w = env_of(lab, "vnpu-w", whole)["ASCEND_RT_VISIBLE_DEVICES"].split(",")
    assert len(q) == 2
    assert set(q) <= {"100", "101", "102", "103"}
    assert len(h) == 1
    assert set(h) <= {"104", "105"}
    assert w == ["0", "1"]
