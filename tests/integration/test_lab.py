"""The lab cluster as a person uses it: idempotent up, status, env, tenants in Slurm."""

from __future__ import annotations

import os
import subprocess

import pytest

from aipool.lab.cluster import Lab
from slurm_plugins.client import SlurmClient

pytestmark = pytest.mark.slurm


def test_up_again_starts_nothing(lab: Lab) -> None:
    report = lab.up()
    assert report.started == []
    assert "slurmctld" in report.reused
    assert lab.is_up()


def test_nodes_partitions_and_gres(client: SlurmClient) -> None:
    nodes = {n.name: n for n in client.nodes()}
    assert set(nodes) == {"gpu1", "gpu2", "npu1", "npu2", "cpu1"}
    for name in ("gpu1", "gpu2"):
        assert nodes[name].gres_total("gpu") == 4
        assert nodes[name].gres_total("shard") == 128
        assert "a100" in nodes[name].features
    assert nodes["npu1"].gres_total("npu") == 8
    assert {(g.type, g.count) for g in nodes["npu2"].gres} == {
        ("910b", 2),
        ("910b_vir05", 4),
        ("910b_vir10", 2),
    }
    assert nodes["cpu1"].gres == ()
    parts = {p.name: p for p in client.partitions()}
    assert set(parts) >= {"gpu", "npu", "cpu"}
    assert parts["gpu"].default


def test_demo_tenants_exist_in_slurm(client: SlurmClient) -> None:
    assocs = client.associations()
    accounts = {a.account: a for a in assocs if not a.user}
    assert accounts["nlp"].parent == "research"
    assert accounts["cs101"].parent == "teaching"
    users = {(a.user, a.account) for a in assocs if a.user}
    assert {("alice", "nlp"), ("bob", "vision"), ("carol", "cs101")} <= users
    qos = {q.name: q for q in client.qos()}
    assert set(qos["high"].preempt) == {"normal", "low"}
    assert qos["high"].priority > qos["normal"].priority > qos["low"].priority


def test_env_lets_plain_slurm_commands_reach_the_lab(lab: Lab) -> None:
    exports = dict(
        line.removeprefix("export ").split("=", 1) for line in lab.env_exports().splitlines()
    )
    out = subprocess.run(
        ["sinfo", "-h", "-o", "%P"],
        env={**os.environ, **exports},
        capture_output=True,
        text=True,
        check=True,
    )
    assert "gpu*" in out.stdout.split()


def test_status_reports_every_daemon(lab: Lab) -> None:
    st = lab.status()
    assert st["up"]
    names = set(st["daemons"])
    assert {"slurmctld", "slurmdbd", "slurmrestd", "mariadbd", "slurmd-gpu1"} <= names
    assert all(d["running"] for d in st["daemons"].values())
