"""The parser on real Slurm 24.11 output (recorded on Debian 13, see tests/data/slurm/24.11)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurm_plugins.client import parse
from slurm_plugins.client.errors import ParseError
from slurm_plugins.client.models import JobState, NodeState

DATA = Path(__file__).parents[2] / "data" / "slurm" / "24.11"


def read(name: str) -> str:
    return (DATA / name).read_text()


def test_squeue_jobs_are_typed() -> None:
    jobs = {j.job_id: j for j in parse.jobs(read("squeue.json"))}
    whole = jobs[6]
    assert whole.state is JobState.RUNNING
    assert (whole.user, whole.account, whole.qos) == ("root", "physics", "high")
    assert whole.tres_alloc.gpus == 1
    assert whole.tres_alloc.typed("gpu") == {"a100": 1}
    assert whole.time_limit_min == 1440
    assert jobs[7].tres_alloc.shards == 16
    assert jobs[9].tres_alloc.npus == 2


@pytest.mark.parametrize(
    ("listed", "state"),
    [
        (["RUNNING", "CONFIGURING"], JobState.CONFIGURING),  # its node is powering up
        (["COMPLETED", "COMPLETING"], JobState.COMPLETING),  # still holds its node
        (["PENDING", "REQUEUED"], JobState.REQUEUED),
        (["PENDING", "REQUEUE_HOLD"], JobState.PENDING),  # a flag with no state of its own
        (["RUNNING"], JobState.RUNNING),
        (["RUNNING", "POWER_UP_NODE"], JobState.RUNNING),  # a flag 22.05 never names
    ],
)
def test_a_jobs_flags_name_its_state_as_on_2205(listed: list[str], state: JobState) -> None:
    """24.11 lists the base state and its flags; 22.05 prints one word, a flag first."""
    doc = json.loads(read("squeue.json"))
    doc["jobs"] = [dict(doc["jobs"][0], job_state=listed)]
    (job,) = parse.jobs(doc)
    assert job.state is state
    assert job.state.is_active


@pytest.mark.parametrize(
    ("job_id", "reason"),
    [(12, "JobHeldUser"), (13, "Resources"), (14, "AssocGrpGRES"), (15, "Dependency")],
)
def test_pending_reasons(job_id: int, reason: str) -> None:
    job = {j.job_id: j for j in parse.jobs(read("squeue.json"))}[job_id]
    assert job.is_pending
    assert job.reason == reason


def test_held_job_is_recognised() -> None:
    jobs = {j.job_id: j for j in parse.jobs(read("squeue.json"))}
    assert jobs[12].held
    assert not jobs[13].held


def test_array_and_het_jobs() -> None:
    jobs = {j.job_id: j for j in parse.jobs(read("squeue.json"))}
    assert (jobs[18].array_job_id, jobs[18].array_task_id) == (16, 0)
    assert (jobs[10].het_job_id, jobs[10].het_job_offset) == (10, 0)
    assert (jobs[11].het_job_id, jobs[11].het_job_offset) == (10, 1)
    assert jobs[6].array_job_id is None


def test_scontrol_nodes_with_gres_in_use() -> None:
    nodes = {n.name: n for n in parse.nodes(read("scontrol_nodes.json"))}
    n1 = nodes["node1"]
    assert n1.state is NodeState.MIXED
    assert n1.gres_total("gpu") == 4
    assert n1.gres_total("shard") == 128
    assert n1.gres_in_use("shard") == 40
    assert nodes["node3"].gres_in_use("npu") == 3
    assert n1.available
    assert n1.port == 27001


def test_partitions() -> None:
    parts = {p.name: p for p in parse.partitions(read("scontrol_partitions.json"))}
    assert parts["gpu"].nodes == "node[1-2]"
    assert parts["gpu"].total_cpus == 32
    assert parts["gpu"].max_time_min is None  # INFINITE


def test_partitions_json_has_no_default_flag_so_the_text_records_are_read() -> None:
    assert not any(p.default for p in parse.partitions(read("scontrol_partitions.json")))
    parts = {p.name: p for p in parse.partitions_text(read("scontrol_partitions.txt"))}
    assert [n for n, p in parts.items() if p.default] == ["gpu"]
    assert (parts["gpu"].nodes, parts["gpu"].total_cpus, parts["cpu"].total_nodes) == (
        "gpu[1-2]",
        32,
        1,
    )
    assert parts["npu"].max_time_min is None


def test_sacct_records_with_gres_tres_and_steps() -> None:
    recs = {r.job_id: r for r in parse.acct_jobs(read("sacct.json"))}
    assert recs[1].state is JobState.COMPLETED
    assert recs[1].tres_alloc.typed("gpu") == {"a100": 1}
    assert [s.step_id for s in recs[1].steps] == ["batch", "0", "1"]
    assert recs[2].state is JobState.FAILED
    assert recs[2].exit_code == 3
    assert recs[2].tres_alloc.shards == 8
    assert recs[3].tres_alloc.typed("npu") == {"910b": 1}
    assert recs[5].state is JobState.CANCELLED
    assert recs[11].het_job_id == 10


def test_associations_and_qos() -> None:
    assocs = parse.associations(read("sacctmgr_assoc.json"))
    physics = next(a for a in assocs if a.account == "physics" and not a.user)
    assert physics.grp_tres["gres/gpu"] == 8
    assert physics.parent == "root"
    assert set(physics.qos) == {"high", "normal", "low"}
    qos = {q.name: q for q in parse.qos(read("sacctmgr_qos.json"))}
    assert qos["high"].preempt == ("low",)
    assert qos["high"].priority == 1000


def test_slurm_errors_become_parse_errors() -> None:
    with pytest.raises(ParseError, match="Slurm reported errors: boom"):
        parse.jobs('{"errors": [{"description": "boom"}]}')
    with pytest.raises(ParseError, match="not JSON"):
        parse.jobs("squeue: error: oops")
    with pytest.raises(ParseError, match="no 'nodes'"):
        parse.nodes("{}")


@pytest.mark.parametrize("as_bytes", [False, True])
def test_squeue_with_a_cluster_named_prints_a_banner_above_its_json(as_bytes: bool) -> None:
    out = read("squeue_M.txt")
    assert out.startswith("CLUSTER: aipool\n")
    assert parse.jobs(out.encode() if as_bytes else out) == []
    with pytest.raises(ParseError, match="not JSON"):
        parse.jobs("CLUSTER aipool\n{}")
