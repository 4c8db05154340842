"""The lab cluster as a person uses it: idempotent up, status, env, tenants in Slurm."""

from __future__ import annotations

import os
import subprocess

import pytest

from aipool.lab.cluster import Lab
from aipool.lab.daemons import alive
from aipool.lab.demo import DEMO_JOBS, run_demo
from slurm_plugins.client import SlurmClient
from tests.integration.conftest import side_lab, wait_until

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


def test_down_stops_only_what_it_started_and_wipes_its_state(lab: Lab) -> None:
    """A second lab beside this one: its ``down`` stops its own daemons (by PID) and nothing
    else, not the lab under test's same-named daemons, nor a stranger's process that calls
    itself slurmctld."""
    stranger = subprocess.Popen(["bash", "-c", "exec -a slurmctld sleep 300"])
    try:
        with side_lab(lab, "down", "down", 200) as side:
            started = {name: d["pid"] for name, d in side.status()["daemons"].items()}
            assert {"slurmctld", "slurmdbd", "mariadbd", "slurmd-gpu1"} <= set(started)
            assert set(started.values()).isdisjoint(
                d["pid"] for d in lab.status()["daemons"].values()
            )
            root = side.cfg.root
            assert (root / "etc").is_dir()
            stopped = side.down()
            assert set(stopped) == set(started)
            assert not any(alive(pid) for pid in started.values())
            assert not side.is_up()
            assert not side.cfg.ledger.exists()
            assert [p.name for p in root.iterdir()] == []
        assert stranger.poll() is None, "a process the lab did not start was stopped"
        assert lab.is_up(), "the other lab's daemons were stopped"
        assert all(d["running"] for d in lab.status()["daemons"].values())
    finally:
        stranger.kill()
        stranger.wait()


def test_demo_workload_shows_a_whole_card_a_shared_card_and_npus(
    lab: Lab, client: SlurmClient
) -> None:
    """What README's first command shows: each demo job's view of its devices."""
    lines: list[str] = []
    ids = run_demo(lab, wait=True, echo=lines.append)
    seen: dict[int, dict[str, str]] = {}
    current = 0
    for line in lines:
        if line.startswith("--- job "):
            current = int(line.split()[2])
            seen[current] = {}
        elif current and "=" in line:
            for word in line.split():
                key, _, value = word.partition("=")
                seen[current][key] = value
    whole, half_a, half_b, npu = (seen[i] for i in ids)
    assert len(whole["CUDA_VISIBLE_DEVICES"].split(",")) == 1
    assert half_a["node"] == half_b["node"] == "gpu2"
    assert half_a["CUDA_VISIBLE_DEVICES"] == half_b["CUDA_VISIBLE_DEVICES"] != ""
    assert half_a["SLURM_SHARDS_ON_NODE"] == half_b["SLURM_SHARDS_ON_NODE"] == "16"
    assert npu["node"].startswith("npu")
    assert len(npu["ASCEND_RT_VISIBLE_DEVICES"].split(",")) == 2
    assert [seen[i]["user"] for i in ids] == [d.user for d in DEMO_JOBS]

    def all_completed() -> bool:  # slurmdbd records a job's end a moment after it ends
        states = {r.job_id: r.state.value for r in client.accounting(job_ids=ids)}
        return set(states) == set(ids) and set(states.values()) == {"COMPLETED"}

    wait_until(all_completed, 30)
