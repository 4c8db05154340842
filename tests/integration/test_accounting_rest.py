"""sacct through the client, and slurmrestd acting as a demo user."""

from __future__ import annotations

import pytest

from aipool.lab.cluster import Lab
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.errors import AuthenticationError
from slurm_plugins.client.job import Component, Gres, JobRequest
from slurm_plugins.client.models import JobState
from slurm_plugins.client.rest import RestClient, mint_token, read_key
from tests.integration.conftest import wait_until

pytestmark = pytest.mark.slurm

SHORT = "#!/bin/bash\nsleep 2\n"


def test_sacct_reports_gpu_shard_and_npu_tres(client: SlurmClient, lab: Lab) -> None:
    common = [f"--chdir={lab.cfg.jobs}", "--output=/dev/null", "--time=2"]
    ids = {
        "gpu": client.submit(SHORT, [*common, "-p", "gpu", "--gres=gpu:a100:2"]),
        "shard": client.submit(SHORT, [*common, "-p", "gpu", "--gres=shard:8"]),
        "npu": client.submit(SHORT, [*common, "-p", "npu", "--gres=npu:910b:1"]),
    }

    def finished() -> bool:
        recs = client.accounting(job_ids=ids.values())
        return len(recs) == 3 and all(r.state is JobState.COMPLETED for r in recs)

    wait_until(finished, 60, interval=1)
    recs = {r.job_id: r for r in client.accounting(job_ids=ids.values())}
    gpu, shard, npu = recs[ids["gpu"]], recs[ids["shard"]], recs[ids["npu"]]
    assert gpu.tres_alloc["gres/gpu"] == 2
    assert gpu.tres_alloc.typed("gpu") == {"a100": 2}
    assert shard.tres_alloc["gres/shard"] == 8
    assert shard.tres_alloc["gres/gpu"] == 0
    assert npu.tres_alloc["gres/npu"] == 1
    assert npu.tres_alloc.typed("npu") == {"910b": 1}
    for rec in recs.values():
        assert rec.cluster == lab.cfg.cluster
        assert rec.elapsed_s >= 1
        assert rec.start_time is not None
        assert rec.end_time is not None
        assert rec.start_time <= rec.end_time
        assert rec.user == "root"


def test_rest_acts_as_the_demo_user(client: SlurmClient, lab: Lab) -> None:
    key = read_key(lab.cfg.jwt_key)
    with RestClient(lab.cfg.rest_url, "alice", key=key) as rest:
        assert rest.ping()
        part = Component(account="nlp", partition="gpu", time_limit=2, gres=(Gres("shard", 4),))
        request = JobRequest(
            (part,),
            name="rest-alice",
            workdir=str(lab.cfg.jobs),
            output="/dev/null",
            environment={"PATH": "/usr/bin:/bin"},
        )
        job_id = rest.submit("#!/bin/bash\nsleep 30\n", request)
        job = rest.job(job_id)
        assert job.user == "alice"
        assert job.account == "nlp"
        assert any(j.job_id == job_id for j in rest.jobs())
        nodes = {n.name for n in rest.nodes()}
        assert {"gpu1", "gpu2", "npu1", "cpu1"} <= nodes
        rest.cancel(job_id)
    wait_until(lambda: all(j.job_id != job_id for j in client.jobs()), 30)


def test_rest_refuses_bad_tokens(lab: Lab) -> None:
    with (
        RestClient(lab.cfg.rest_url, "alice", token="not-a-token") as rest,
        pytest.raises(AuthenticationError),
    ):
        rest.jobs()
    forged = mint_token(b"x" * 32, "alice")
    with (
        RestClient(lab.cfg.rest_url, "alice", token=forged) as rest,
        pytest.raises(AuthenticationError),
    ):
        rest.jobs()
    expired = mint_token(read_key(lab.cfg.jwt_key), "alice", now=0)
    with (
        RestClient(lab.cfg.rest_url, "alice", token=expired) as rest,
        pytest.raises(AuthenticationError),
    ):
        rest.jobs()
