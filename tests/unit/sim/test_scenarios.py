"""The replay set-up from a trace and Kueue's baseline scenario, small enough for unit tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim import kueue, replay
from sim.cli import cli
from sim.trace import NodeSpec, Task, TraceError
from tests.unit.sim.conftest import DATA


def test_node_slice_keeps_every_kth_node(nodes: list[NodeSpec]) -> None:
    assert [n.name for n in replay.node_slice(nodes, 0.5)] == ["node-a", "node-c", "node-e"]
    assert replay.node_slice(nodes, 1.0) == nodes
    with pytest.raises(ValueError, match="fraction"):
        replay.node_slice(nodes, 0)


def test_replay_jobs_follow_the_trace(tasks: list[Task]) -> None:
    factor = replay.compression(tasks, 17.0, 1.0, max_runtime_s=600)
    jobs = replay.jobs(tasks, factor=factor, tenant_count=3, max_runtime_s=600)
    assert jobs[0].submit == 0
    assert [j.submit for j in jobs] == sorted(j.submit for j in jobs)
    assert max(j.runtime for j in jobs) <= 600
    assert {j.qos for j in jobs} <= {"high", "normal", "low"}
    assert {j.account for j in jobs} <= {"tenant0", "tenant1", "tenant2"}
    assert replay.tenant_of(tasks[0], 3) == replay.tenant_of(tasks[0], 3)
    work = sum(j.request.total_gpu_milli / 1000 * j.runtime for j in jobs)
    assert work / jobs[-1].submit == pytest.approx(17.0, rel=0.05)  # the offered load


def test_replay_needs_times(tasks: list[Task]) -> None:
    timeless = [Task(t.name, t.request) for t in tasks]
    with pytest.raises(TraceError, match="a replay needs times"):
        replay.compression(timeless, 17.0, 1.0)


def test_run_replay_reports_the_measures(nodes: list[NodeSpec], tasks: list[Task]) -> None:
    setup = replay.ReplaySetup(load=2.0, node_fraction=1.0, tenant_count=2, cycle_s=30)
    result = replay.run_replay(nodes, tasks, "fair", setup)
    assert result["tasks"] == len(tasks)
    assert result["gpus"] == 17
    assert result["overload_hours"] > 0
    assert 0 < result["alloc_overload"] <= 100
    assert 0 < result["jain_tenants"] <= 1
    assert set(result["waits_by_qos"]) <= {"high", "normal", "low"}
    assert result["series"]
    assert result["pinned_by_daemon"] > 0  # the daemon's placement policy steered shares


def test_kueue_scenario_shape() -> None:
    jobs = kueue.jobs()
    assert len(jobs) == 30 * 500
    assert {j.klass for j in jobs} == {"small", "medium", "large"}
    assert len(kueue.tenants()) == 30
    assert kueue.nodes()[0].cpu_milli == 600_000
    large = [j for j in jobs if j.klass == "large" and j.account == "cohort0-cq0"]
    assert [j.submit for j in large[:3]] == pytest.approx([0.0, 1.2, 2.4])


def test_kueue_capacity_on_a_slice_of_the_scenario() -> None:
    result = kueue.run_kueue("capacity", fraction=0.02)
    assert result["unstarted"] == 0
    assert result["min_usage"] > 0
    assert result["meets_kueue_thresholds"]


def test_cli_replay_and_kueue_json(tmp_path: Path) -> None:
    args = ["replay", "--nodes", str(DATA / "nodes.csv"), "--pods", str(DATA / "pods.csv")]
    args += ["--node-fraction", "1", "--policy", "fifo", "--jobs", "1", "--json"]
    out = CliRunner().invoke(cli, [*args, "--out", str(tmp_path)])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["results"][0]["policy"] == "fifo"
    assert data["setup"]["unpinned"] == "scorer"
    assert (tmp_path / "replay.png").exists()
    weight = CliRunner().invoke(cli, [*args, "--unpinned", "weight"])
    assert weight.exit_code == 0, weight.output
    assert json.loads(weight.output)["setup"]["unpinned"] == "weight"
    assert (
        "'random' is not one of" in CliRunner().invoke(cli, [*args, "--unpinned", "random"]).output
    )
    out = CliRunner().invoke(
        cli, ["kueue", "--fraction", "0.01", "--policy", "fifo", "--jobs", "1"]
    )
    assert out.exit_code == 0, out.output
    assert "| kueue (reported) | 55.9 %" in out.output


def test_agree(tmp_path: Path) -> None:
    from sim.consistency import agreement

    predicted = [
        {"name": f"t{k}", "node": None if k == 9 else f"node-{k % 3}", "cards": [k % 4]}
        for k in range(10)
    ]
    same = agreement(predicted, predicted)
    assert same["node_agreement"] == 1.0
    assert same["card_agreement"] == 1.0
    moved = [dict(p, node="elsewhere") if k == 0 else p for k, p in enumerate(predicted)]
    half = agreement(predicted, [{"name": p["name"], "node": p["node"]} for p in moved[:2]])
    assert half["compared"] == 2
    assert half["node_agreement"] == 0.5
    assert half["card_agreement"] is None
    assert half["differences"][0]["observed"] == "elsewhere"
    pred = tmp_path / "p.json"
    pred.write_text(json.dumps({"placements": predicted}))
    obs = tmp_path / "o.json"
    obs.write_text(json.dumps(moved))
    out = CliRunner().invoke(cli, ["agree", str(pred), str(obs)])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["node_agreement"] == pytest.approx(0.9)
    obs.write_text("{}")
    out = CliRunner().invoke(cli, ["agree", str(pred), str(obs)])
    assert out.exit_code == 0  # an empty observation compares nothing
    obs.write_text("[1]")
    assert "expected a JSON list" in CliRunner().invoke(cli, ["agree", str(pred), str(obs)]).output
