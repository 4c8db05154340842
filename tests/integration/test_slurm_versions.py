"""Each Slurm behaviour AIPool's code depends on the release for, checked on the live lab.

The same module runs on Debian 12's 22.05 and on Debian 13's 24.11 (CI runs it on both): on
each it asserts what that release does, as ``slurm_plugins.client.versions`` says, so a
difference that moves shows up here. docs/slurm-versions.md tables them.
"""

from __future__ import annotations

import uuid

import pytest

from aipool.lab.cluster import Lab
from jobspec.errors import SpecError
from jobspec.schema import load_spec
from jobspec.submit import submit_specs
from slurm_plugins.client import SlurmClient, SlurmError, SubmitRejected
from slurm_plugins.client.commands import JobUpdate
from slurm_plugins.client.models import JobState
from slurm_plugins.client.rest import RestClient, read_key
from slurm_plugins.client.versions import shards_across_cards, squeue_every_state
from tests.integration.conftest import wait_job
from tests.integration.test_gres_jobs import env_of, submit

pytestmark = pytest.mark.slurm


def stays_pending(client: SlurmClient, job_id: int, seconds: float = 6) -> str:
    """The job's reason after ``seconds`` in which it never started."""
    with pytest.raises(AssertionError):
        wait_job(client, job_id, lambda j: j.state is not JobState.PENDING, seconds)
    return client.job(job_id).reason


def test_the_rest_client_speaks_the_newest_data_parser_of_the_release(lab: Lab) -> None:
    release = SlurmClient(env=lab.cfg.env()).release_tuple()
    with RestClient(lab.cfg.rest_url, "alice", key=read_key(lab.cfg.jwt_key)) as rest:
        assert rest.api == ("v0.0.42" if release >= (24, 11) else "v0.0.38")
        assert rest.ping()


def test_one_jobs_shards_from_several_cards(client: SlurmClient, lab: Lab) -> None:
    """23.11+ (MULTIPLE_SHARING_GRES_PJ, which the lab sets there): 1.25 cards is 32 shards
    of one card and 8 of the next, and the hook admits it. 22.05: the hook refuses it, and
    Slurm itself (root's jobs pass the hook unchecked) would leave it pending."""
    release = client.release_tuple()
    if shards_across_cards(release):
        job_id = submit(client, lab, "across", "-p", "gpu", "-w", "gpu1", "--gres=shard:40",
                        as_user="alice")  # fmt: skip
        job = wait_job(client, job_id, lambda j: j.state is JobState.RUNNING, 30)
        env = env_of(lab, "across", job_id)
        assert env["SLURM_SHARDS_ON_NODE"] == "40"
        assert env["CUDA_VISIBLE_DEVICES"] == "0,1"
        assert any("(32/32,8/32,0/32,0/32)" in d for d in job.gres_detail), job.gres_detail
    else:
        with pytest.raises(SubmitRejected, match="shard:40 does not fit on one GPU"):
            submit(client, lab, "across", "-p", "gpu", "--gres=shard:40", as_user="alice")
        job_id = submit(client, lab, "across", "-p", "gpu", "-w", "gpu1", "--gres=shard:40")
        assert stays_pending(client, job_id) != ""


def test_a_job_spec_asks_for_more_than_one_card_in_shards(client: SlurmClient, lab: Lab) -> None:
    """``gpus: 1.25`` in a job spec: 40 shards from two cards of gpu1 where the release gives
    them; refused by ``submit_specs`` before Slurm sees anything on 22.05, naming the release."""
    workdir = lab.cfg.jobs / "versions" / uuid.uuid4().hex[:10]
    workdir.mkdir(parents=True)
    workdir.chmod(0o777)
    spec = load_spec(
        {
            "name": "wide",
            "workdir": str(workdir),
            "command": "sleep 120",
            "resources": {"gpus": 1.25, "time": 5},
            "affinity": {"nodes": ["gpu1"]},
        }
    )
    before = {j.job_id for j in client.jobs(active_only=False)}
    if shards_across_cards(client.release_tuple()):
        (done,) = submit_specs([spec], client, as_user="alice")
        job = wait_job(client, done.job_id, lambda j: j.state is JobState.RUNNING, 30)
        assert (job.user, job.nodes) == ("alice", "gpu1")
        assert any("(32/32,8/32,0/32,0/32)" in d for d in job.gres_detail), job.gres_detail
    else:
        with pytest.raises(SpecError, match=r"1\.25 cards: Slurm 22\.05 gives one job's shards"):
            submit_specs([spec], client, as_user="alice")
        assert not {j.job_id for j in client.jobs(active_only=False)} - before


def test_a_cards_shard_marks_after_one_of_its_jobs_ends(client: SlurmClient, lab: Lab) -> None:
    """Two shard jobs on card 0; the first ends. 22.05 then forgets that card 0 still holds
    shards and gives all four cards to a whole-card job (the marks the placement daemon
    works around); 24.11 keeps the mark, and the whole-node job waits."""
    short = submit(client, lab, "mark-a", "-p", "gpu", "-w", "gpu1", "--gres=shard:8", hold=3)
    long = submit(client, lab, "mark-b", "-p", "gpu", "-w", "gpu1", "--gres=shard:8")
    wait_job(client, long, lambda j: j.state is JobState.RUNNING, 30)
    wait_job(client, short, lambda j: j.state.is_finished, 30)
    whole = submit(client, lab, "mark-whole", "-p", "gpu", "-w", "gpu1", "--gres=gpu:a100:4")
    if client.release_tuple() >= (23, 11):
        assert stays_pending(client, whole) == "Resources"
    else:
        wait_job(client, whole, lambda j: j.state is JobState.RUNNING, 30)


def test_the_qos_of_a_running_job_stays_as_it_is(client: SlurmClient, lab: Lab) -> None:
    """Both releases change the QOS of pending jobs only: a borrowed job that already runs
    stays in ``low`` until it ends or is requeued (docs/policy.md)."""
    job_id = submit(client, lab, "qos", "-p", "cpu", "--qos=low")
    wait_job(client, job_id, lambda j: j.state is JobState.RUNNING, 30)
    with pytest.raises(SlurmError, match="no longer pending"):
        client.update_jobs([JobUpdate(job_id, qos="normal")])
    assert client.job(job_id).qos == "low"


def test_a_job_that_just_ended_is_still_listed(client: SlurmClient, lab: Lab) -> None:
    """23.02+ hides ended jobs from ``squeue --json`` unless asked for every state; the
    client asks there, so on both a job that just ended is read with its end state."""
    release = client.release_tuple()
    assert squeue_every_state(release) == ([] if release < (23, 2) else ["--states=all"])
    job_id = submit(client, lab, "ended", "-p", "cpu", hold=0)
    job = wait_job(client, job_id, lambda j: j.state.is_finished, 30)
    assert job.state is JobState.COMPLETED
    assert job_id in {j.job_id for j in client.jobs(active_only=False)}
