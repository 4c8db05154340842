"""Dedicated pools, routing, and changes to pending jobs (slurm_job_modify)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from slurm_plugins.admission.config import PolicyConfig, parse_policy
from tests.unit.admission.luarun import UID, install, job, run, submit

POLICY: dict[str, Any] = {
    "version": 1,
    "cluster": {"default_partition": "gpu"},
    "pools": {
        "gpu": {"kind": "gpu", "partitions": ["gpu"], "shared": True},
        "npu": {"kind": "npu", "partitions": ["npu"], "shared": True},
        "research-gpu": {"kind": "gpu", "partitions": ["gpu-research", "gpu-research-long"]},
        "teaching-npu": {"kind": "npu", "partitions": ["npu-teach"]},
    },
    "tenants": {
        "nlp": {"domain": "research", "pools": ["research-gpu"], "limits": {"time": "2-00:00:00"}},
        "cs101": {
            "domain": "teaching",
            "pools": ["teaching-npu"],
            "shard_sizes": [8, 16, 32],
            "limits": {"time": "4:00:00"},
        },
    },
    "users": {"root": {"unrestricted": True}, "alice": {"tenant": "nlp"}},
}


def policy(**changes: Any) -> PolicyConfig:
    raw = copy.deepcopy(POLICY)
    raw.update(changes)
    return parse_policy(raw)


@pytest.fixture(scope="module")
def hook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install(tmp_path_factory.mktemp("pools") / "etc", policy())


def test_dedicated_pools_are_their_tenants_only(hook: Path) -> None:
    outs = run(
        hook,
        [
            submit("alice research", "alice", partition="gpu-research-long"),
            submit("carol research", "carol", partition="gpu-research"),
            submit("carol teaching npu", "carol", partition="npu-teach"),
            submit("alice teaching npu", "alice", partition="npu-teach"),
            submit("carol shared", "carol", partition="gpu"),
        ],
    )
    ok = {o.name: o for o in outs}
    assert ok["alice research"].accepted
    assert ok["carol teaching npu"].accepted
    assert ok["carol shared"].accepted
    assert ok["carol research"].user == [
        "aipool: partition gpu-research is in pool research-gpu, which is not open to tenant "
        "cs101; it may use npu-teach, gpu and npu"
    ]
    assert "pool teaching-npu, which is not open to tenant nlp" in ok["alice teaching npu"].user[0]


def test_routing_prefers_the_tenants_dedicated_pool(hook: Path) -> None:
    a, c, n = run(
        hook,
        [
            submit("a", "alice", tres_per_node="gres:gpu:2"),
            submit("c", "carol", tres_per_node="gres:shard:8"),
            submit("n", "carol", tres_per_node="gres:npu:1"),
        ],
    )
    assert a.set["partition"] == "gpu-research"
    assert c.set["partition"] == "gpu"
    assert n.set["partition"] == "npu-teach"


def modify(
    name: str, user: str, changes: dict[str, Any], rec: dict[str, Any], uid: int | None = None
) -> dict[str, Any]:
    return {
        "name": name,
        "call": "modify",
        "uid": UID[user] if uid is None else uid,
        "job": {k: v for k, v in job(user, **changes).items() if k != "default_account"},
        "rec": rec,
    }


COURSE_JOB = {
    "account": "cs101",
    "partition": "gpu",
    "qos": "normal",
    "time_limit": 60,
    "tres_per_node": "gres:shard:8",
    "comment": "aipool:anti_affinity=g1",
}


def test_changes_to_pending_jobs_are_checked(hook: Path) -> None:
    outs = {
        o.name: o
        for o in run(
            hook,
            [
                modify("into research", "carol", {"partition": "gpu-research"}, COURSE_JOB),
                modify("to high", "carol", {"qos": "high"}, COURSE_JOB),
                modify("too long", "carol", {"time_limit": 600}, COURSE_JOB),
                modify("bad shard", "carol", {"tres_per_node": "gres:shard:4"}, COURSE_JOB),
                modify("shorter", "carol", {"time_limit": 30}, COURSE_JOB),
                modify("to low", "carol", {"qos": "low"}, COURSE_JOB),
                modify("release", "carol", {"priority": 1}, COURSE_JOB),
                modify("root may", "carol", {"partition": "gpu-research"}, COURSE_JOB, uid=0),
            ],
        )
    }
    assert "not open to tenant cs101" in outs["into research"].user[0]
    assert "priority class high" in outs["to high"].user[0]
    assert "time limit 10:00:00 is over the 4:00:00" in outs["too long"].user[0]
    assert "shard:4 is not a size tenant cs101 may use" in outs["bad shard"].user[0]
    for name in ("shorter", "release", "root may"):
        assert outs[name].accepted, name
        assert outs[name].set == {}, name
    low = outs["to low"]
    assert low.accepted
    assert low.set["admin_comment"].startswith(
        "aipool:tenant=cs101,domain=teaching,class=low,group=g1,"
    )


def test_a_stricter_policy_does_not_trap_admitted_jobs(hook: Path) -> None:
    """The job's shard size is no longer allowed, but it only changes its time limit."""
    old_job = {**COURSE_JOB, "tres_per_node": "gres:shard:4"}
    (out,) = run(hook, [modify("shorter", "carol", {"time_limit": 30}, old_job)])
    assert out.accepted


def test_dedicated_pool_of_two_domains_is_refused() -> None:
    raw = copy.deepcopy(POLICY)
    raw["tenants"]["cs101"]["pools"] = ["teaching-npu", "research-gpu"]
    with pytest.raises(
        ValueError, match=r"pools\.research-gpu: a dedicated pool serves one domain"
    ):
        parse_policy(raw)
