"""The parser on real Slurm 22.05 output (recorded on the lab, see tests/data/slurm/22.05)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gres.hostlist import expand_hostlist
from slurm_plugins.client import parse
from slurm_plugins.client.errors import ParseError
from slurm_plugins.client.models import Job, JobState, NodeState

DATA = Path(__file__).parents[2] / "data" / "slurm"
V22 = DATA / "22.05"


def read(name: str) -> str:
    return (V22 / name).read_text()


def jobs() -> dict[int, Job]:
    return {j.job_id: j for j in parse.jobs(read("squeue.json"))}


def test_running_jobs() -> None:
    js = jobs()
    assert js[51].state is JobState.RUNNING
    assert js[51].tres_alloc.shards == 16
    assert js[51].gres_detail == ("shard:16(IDX:0)",)
    assert js[53].tres_alloc.typed("npu") == {"910b": 2}
    assert js[53].gres_detail == ("npu:910b:2(IDX:0-1)",)
    assert js[51].nodes == "gpu2"


def test_finished_jobs_in_memory_and_exit_codes() -> None:
    js = jobs()
    assert js[47].state is JobState.COMPLETED
    assert not js[47].state.is_active
    assert js[48].state is JobState.FAILED
    assert js[48].exit_code == 3  # raw wait status 768
    assert js[50].state is JobState.CANCELLED
    assert js[50].exit_code == 128 + 15


@pytest.mark.parametrize(
    ("job_id", "reason"),
    [
        (56, "JobHeldUser"),
        (57, "Resources"),
        (58, "AssocGrpGRES"),
        (59, "Dependency"),
        (60, "JobArrayTaskLimit"),
    ],
)
def test_pending_reasons(job_id: int, reason: str) -> None:
    job = jobs()[job_id]
    assert job.is_pending
    assert job.reason == reason
    assert job.held == (reason == "JobHeldUser")


def test_array_and_het() -> None:
    js = jobs()
    assert (js[61].array_job_id, js[61].array_task_id) == (60, 0)
    assert (js[62].array_job_id, js[62].array_task_id) == (60, 1)
    assert (js[54].het_job_id, js[54].het_job_offset) == (54, 0)
    assert (js[55].het_job_id, js[55].het_job_offset) == (54, 1)
    assert js[51].het_job_id is None


def test_nodes_from_sinfo() -> None:
    nodes = {n.name: n for n in parse.nodes(read("sinfo.json"))}
    assert set(nodes) == {"gpu1", "gpu2", "npu1", "cpu1"}
    assert nodes["cpu1"].state is NodeState.IDLE
    assert nodes["gpu2"].state is NodeState.MIXED
    # two 16-shard jobs on one card: 32 shards in use, though gres_used says "shard:a100:1"
    assert nodes["gpu2"].gres_in_use("shard") == 32
    assert nodes["gpu1"].gres_in_use("gpu") == 2
    assert nodes["npu1"].gres_total("npu") == 8
    assert nodes["cpu1"].gres == ()


def test_partitions_from_scontrol_text() -> None:
    parts = {p.name: p for p in parse.partitions_text(read("scontrol_partitions.txt"))}
    assert parts["gpu"].default
    assert not parts["npu"].default
    assert parts["gpu"].nodes == "gpu[1-2]"
    assert parts["gpu"].max_time_min is None
    assert parts["cpu"].total_cpus == 16


def test_sacct_records() -> None:
    recs = {r.job_id: r for r in parse.acct_jobs(read("sacct.json"))}
    assert recs[47].tres_alloc.typed("gpu") == {"a100": 1}
    assert recs[48].tres_alloc.shards == 8
    assert recs[49].tres_alloc.npus == 1
    assert recs[48].state is JobState.FAILED
    assert [s.step_id for s in recs[47].steps] == ["batch"]
    assert recs[55].het_job_id == 54
    assert recs[55].het_job_offset == 1
    assert recs[61].array_job_id == 60
    assert all(r.cluster == "aipool" for r in recs.values())


def test_sacctmgr_parsable() -> None:
    assocs = parse.associations_parsable(read("sacctmgr_assoc.txt"))
    nlp = next(a for a in assocs if a.account == "nlp" and not a.user)
    assert nlp.parent == "research"
    alice = next(a for a in assocs if a.user == "alice")
    assert set(alice.qos) == {"high", "low", "normal"}
    assert alice.default_qos == "normal"
    physics = next(a for a in assocs if a.account == "physics" and not a.user)
    assert physics.grp_tres["gres/gpu"] == 2
    qos = {q.name: q for q in parse.qos_parsable(read("sacctmgr_qos.txt"))}
    assert set(qos["high"].preempt) == {"low", "normal"}
    assert qos["normal"].priority == 500


def test_both_versions_read_into_the_same_shape() -> None:
    """A running 16-shard job and a 2-NPU job look the same whichever Slurm printed them."""
    new = {j.job_id: j for j in parse.jobs((DATA / "24.11" / "squeue.json").read_text())}
    old = jobs()
    for a, b in ((old[51], new[7]), (old[53], new[9])):
        assert a.state is b.state is JobState.RUNNING
        assert a.tres_alloc.shards == b.tres_alloc.shards
        assert a.tres_alloc.typed("npu") == b.tres_alloc.typed("npu")
        assert a.exit_code == b.exit_code == 0
        assert a.start_time is not None
        assert b.start_time is not None


def test_parsable_rows_must_have_every_field() -> None:
    with pytest.raises(ParseError, match="expected 9 fields"):
        parse.qos_parsable("normal|0\n")


def test_leaf_switches_from_scontrol_show_topology() -> None:
    leaves = parse.leaf_switches(read("scontrol_show_topology.txt"), expand_hostlist)
    assert leaves == {"tgpu1": "leaf1", "tgpu3": "leaf1", "tgpu2": "leaf2", "tgpu4": "leaf2"}
    assert parse.leaf_switches("", expand_hostlist) == {}
