"""The admission hook in the real slurmctld: refusals users see, defaults and tags, reloads.

Jobs are submitted held (nothing runs) as the demo users and cancelled by the ``client``
fixture. The reload test swaps the lab's policy table for a superset of the lab policy (a
new shard size, a pool no lab partition is in), so other tests running meanwhile see no
difference, and puts the lab policy back before it ends.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from aipool.lab.cluster import Lab
from slurm_plugins.admission import TABLE_FILE, parse_policy, render_hook, write_files
from slurm_plugins.admission.config import LAB_POLICY, PolicyConfig, load_policy
from slurm_plugins.admission.table import build_table
from slurm_plugins.client import SlurmClient, SubmitRejected, UnsatisfiableRequest
from slurm_plugins.client.job import Component, Gres, JobRequest
from slurm_plugins.client.models import Job
from slurm_plugins.client.rest import RestClient, read_key
from slurm_plugins.client.versions import shards_across_cards
from tests.integration.conftest import RELEASE, wait_until

pytestmark = pytest.mark.slurm

SCRIPT = "#!/bin/bash\ntrue\n"
DIGEST = build_table(load_policy(LAB_POLICY), release=RELEASE)["digest"]


def held(client: SlurmClient, lab: Lab, user: str, *opts: str) -> int:
    options = [f"--chdir={lab.cfg.jobs}", "--output=/dev/null", "-H", *opts]
    return client.submit(SCRIPT, options, as_user=user)


def tag(job: Job) -> dict[str, str]:
    assert job.admin_comment.startswith("aipool:"), job.admin_comment
    return dict(item.split("=", 1) for item in job.admin_comment[len("aipool:") :].split(","))


REFUSED = [
    ("carol", ["--gres=shard:6"], "aipool: shard:6 is not a size tenant cs101 may use"),
    *(
        []  # Slurm 23.11+: one job's shards may come from several cards
        if shards_across_cards(RELEASE)
        else [("alice", ["--gres=shard:40"], "aipool: shard:40 does not fit on one GPU")]
    ),
    (
        "dave",
        ["-p", "gpu", "--gres=npu:910b:1"],
        "aipool: partition gpu holds GPUs, but this job asks for NPUs; submit it with -p npu",
    ),
    ("bob", ["-p", "cpu", "--gres=shard:8"], "aipool: partition cpu holds no accelerators"),
    ("bob", ["--qos=high"], "aipool: priority class high (--qos=high) is not open to tenant"),
    ("carol", ["-N2", "--gres=gpu:a100:4"], "aipool: this job asks for 8 GPUs in all"),
    ("carol", ["-p", "cpu", "--time=5:00:00"], "aipool: time limit 5:00:00 is over the 4:00:00"),
    ("bob", ["-p", "debug"], "aipool: partition debug is in no pool of the admission policy"),
    ("bob", ["--comment=aipool:anti_affinity=a/b"], "aipool: the anti-affinity group"),
]


@pytest.mark.parametrize(("user", "opts", "message"), REFUSED, ids=[m for *_, m in REFUSED])
def test_bad_requests_are_refused_with_the_hooks_message(
    client: SlurmClient, lab: Lab, user: str, opts: list[str], message: str
) -> None:
    with pytest.raises(SubmitRejected) as info:
        held(client, lab, user, *opts)
    assert not isinstance(info.value, UnsatisfiableRequest)
    assert message in info.value.message


LANGUAGES = [
    ("LANG=zh_CN.UTF-8", "aipool: 该作业共申请 8 张 GPU 卡；租户 cs101 每个作业最多可用 4 张"),
    ("LANG=en_US.UTF-8", "aipool: this job asks for 8 GPUs in all; tenant cs101 may use at most"),
    ("LC_ALL=zh_CN.UTF-8,LANG=en_US.UTF-8", "aipool: 该作业共申请 8 张 GPU 卡"),
    ("AIPOOL_LANG=en,LANG=zh_CN.UTF-8", "aipool: this job asks for 8 GPUs in all"),
]


@pytest.mark.parametrize(("export", "message"), LANGUAGES, ids=[e for e, _ in LANGUAGES])
def test_the_hook_refuses_in_the_language_the_job_carries(
    client: SlurmClient, lab: Lab, export: str, message: str
) -> None:
    """slurmctld shows the hook the job's environment: the locale sbatch passes from the
    user's shell (here named with --export), or the portal's AIPOOL_LANG before it."""
    with pytest.raises(SubmitRejected) as info:
        held(client, lab, "carol", "-N2", "--gres=gpu:a100:4", f"--export={export}")
    assert message in info.value.message


def test_good_requests_get_defaults_and_tags(client: SlurmClient, lab: Lab) -> None:
    course = client.job(held(client, lab, "carol", "--gres=shard:8"))
    assert (course.account, course.qos, course.partition) == ("cs101", "normal", "gpu")
    assert course.time_limit_min == 60
    assert tag(course) == {
        "tenant": "cs101",
        "domain": "teaching",
        "class": "medium",
        "policy": DIGEST,
    }
    assert course.held  # the hook never sets a priority, which would release it

    research = client.job(
        held(
            client,
            lab,
            "alice",
            "--gres=npu:910b_vir05:2",
            "--qos=medium",
            "--comment=aipool:name=x,anti_affinity=ring-1",
        )
    )
    assert (research.partition, research.qos, research.time_limit_min) == ("npu", "normal", 1440)
    assert tag(research)["group"] == "ring-1"
    assert research.comment == "aipool:name=x,anti_affinity=ring-1"

    urgent = client.job(held(client, lab, "alice", "--gres=shard:4", "--qos=high", "-t", "5"))
    assert (urgent.qos, urgent.time_limit_min, tag(urgent)["class"]) == ("high", 5, "high")

    operator = client.job(held(client, lab, "root", "--gres=gpu:a100:1", "--qos=low"))
    assert tag(operator) == {"class": "low", "policy": DIGEST}
    assert operator.time_limit_min is None or operator.time_limit_min > 10**6  # untouched


#: What the lab's other tests and demos submit, as any demo user.
PLAIN = [
    ["--gres=gpu:a100:1"],
    ["--gres=shard:16"],
    ["-p", "gpu", "-w", "gpu2", "--gres=shard:8"],
    ["--gres=shard:4"],
    ["-p", "npu", "--gres=npu:910b:3"],
    ["-p", "npu", "-w", "npu2", "--gres=npu:910b_vir05:2"],
    ["-p", "cpu", "--time=3", "--qos=low"],
    ["-p", "cpu", "--begin=now+1hour", "--array=1-3"],
]


@pytest.mark.parametrize("user", ["root", "alice", "bob", "carol", "dave"])
def test_the_labs_plain_requests_pass(client: SlurmClient, lab: Lab, user: str) -> None:
    ids = [held(client, lab, user, *opts) for opts in PLAIN]
    jobs = {j.job_id: j for j in client.jobs() if j.job_id in ids or j.array_job_id in ids}
    assert set(ids) <= set(jobs) | {j.array_job_id for j in jobs.values()}
    assert all(j.admin_comment.startswith("aipool:") for j in jobs.values())


def test_heterogeneous_components_are_each_admitted(client: SlurmClient, lab: Lab) -> None:
    script = "#!/bin/bash\n#SBATCH -p cpu\n#SBATCH hetjob\n#SBATCH -p gpu --gres=shard:4\ntrue\n"
    job_id = client.submit(
        script, [f"--chdir={lab.cfg.jobs}", "--output=/dev/null", "-H"], as_user="dave"
    )
    try:
        parts = [j for j in client.jobs() if j.het_job_id == job_id]
        assert sorted(j.partition for j in parts) == ["cpu", "gpu"]
        assert all(tag(j)["tenant"] == "cs101" for j in parts)
    finally:  # a component cannot be cancelled alone: the whole job, before the fixture looks
        client.cancel([job_id])
        wait_until(lambda: all(j.het_job_id != job_id for j in client.jobs()), 30)
    bad = "#!/bin/bash\n#SBATCH -p cpu\n#SBATCH hetjob\n#SBATCH -p gpu --gres=shard:6\ntrue\n"
    with pytest.raises(SubmitRejected, match="shard:6 is not a size"):
        client.submit(bad, [f"--chdir={lab.cfg.jobs}", "--output=/dev/null", "-H"], as_user="dave")


def test_rest_submissions_go_through_the_hook(client: SlurmClient, lab: Lab) -> None:
    def job(shards: int, partition: str = "gpu") -> JobRequest:
        gres = (Gres("shard", shards),)
        part = Component(account="nlp", partition=partition, time_limit=2, gres=gres)
        return JobRequest(
            (part,),
            name="rest-admission",
            workdir=str(lab.cfg.jobs),
            output="/dev/null",
            environment={"PATH": "/usr/bin:/bin"},
        )

    with RestClient(lab.cfg.rest_url, "alice", key=read_key(lab.cfg.jwt_key)) as rest:
        job_id = rest.submit("#!/bin/bash\nsleep 30\n", job(4))
        try:
            assert tag(client.job(job_id))["tenant"] == "nlp"
            with pytest.raises(SubmitRejected):  # slurmrestd drops the hook's text (P18)
                rest.submit(SCRIPT, job(4, partition="cpu"))  # no accelerators there
        finally:
            rest.cancel(job_id)


# ------------------------------------------------------------------------------ reload
def wider_policy() -> PolicyConfig:
    """The lab policy plus one shard size for the course and one research-only pool."""
    raw: dict[str, Any] = copy.deepcopy(yaml.safe_load(LAB_POLICY.read_text()))
    raw["tenants"]["cs101"]["shard_sizes"].append(6)
    raw["pools"]["research-gpu"] = {"kind": "gpu", "partitions": ["gpu-research"]}
    for name in ("nlp", "vision"):
        raw["tenants"][name]["pools"] = ["research-gpu"]
    return parse_policy(raw)


@pytest.fixture
def lab_policy_restored(lab: Lab) -> Iterator[Path]:
    yield lab.cfg.admission  # the table's directory, which slurmctld's hook reads
    write_files(render_hook(load_policy(LAB_POLICY), release=RELEASE), lab.cfg.admission)


def accepted(client: SlurmClient, lab: Lab, user: str, *opts: str) -> bool:
    try:
        held(client, lab, user, *opts)
    except SubmitRejected:
        return False
    return True


def test_a_rerendered_policy_applies_without_a_restart(
    client: SlurmClient, lab: Lab, lab_policy_restored: Path
) -> None:
    ctld = lab.status()["daemons"]["slurmctld"]["pid"]
    with pytest.raises(SubmitRejected, match="partition gpu-research is in no pool"):
        held(client, lab, "carol", "-p", "gpu-research")
    assert not accepted(client, lab, "carol", "--gres=shard:6")

    assert write_files(render_hook(wider_policy(), release=RELEASE), lab_policy_restored) == [
        TABLE_FILE
    ]
    wait_until(lambda: accepted(client, lab, "carol", "--gres=shard:6"), 10)
    with pytest.raises(SubmitRejected, match="is in pool research-gpu, which is not open"):
        held(client, lab, "carol", "-p", "gpu-research")
    with pytest.raises(UnsatisfiableRequest, match="Invalid partition name"):
        held(client, lab, "alice", "-p", "gpu-research")  # admitted; Slurm has no such partition

    write_files(render_hook(load_policy(LAB_POLICY), release=RELEASE), lab_policy_restored)
    wait_until(lambda: not accepted(client, lab, "carol", "--gres=shard:6"), 10)
    assert lab.status()["daemons"]["slurmctld"]["pid"] == ctld
