"""The consistency check's pure side: slicing a trace for the lab, the live rules' prediction
(the daemon's engine on a copy of the lab, slurmctld's cards and its shard marks), against
what the lab did (recorded by ``bench/sim_consistency.py``: ``lab_live_observed.json``;
slurmctld's card choices and the card probe in ``lab_observed.json``)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from gres.placement import Request
from sim.consistency import (
    agreement,
    sbatch_resources,
    scale_slice,
    typical_node,
    write_tasks,
)
from sim.labcheck import _settle, model_cards
from sim.labslice import load_nodes, load_slice, predict_live
from sim.trace import NodeSpec, Task, load_tasks
from slurm_plugins.client import labels as job_labels
from slurm_plugins.client import parse
from slurm_plugins.client.models import Job
from slurm_plugins.policy.snapshot import NodeInfo
from tests.unit.sim.conftest import DATA

LAB = [NodeSpec("gpu1", 16000, 64000, 4, "a100"), NodeSpec("gpu2", 16000, 64000, 4, "a100")]
OBSERVED = json.loads((DATA / "lab_observed.json").read_text())
LIVE = json.loads((DATA / "lab_live_observed.json").read_text())


def test_the_live_slice_lands_as_the_lab_placed_it() -> None:
    """Recorded on the lab: 210 tasks of every shape, through the hook, the daemon and
    slurmctld, each on the node and cards the daemon's engine predicts."""
    tasks = load_slice(DATA / "lab_live_slice.csv")
    predicted = predict_live(load_nodes(DATA / "lab_nodes.json"), tasks)
    result = agreement(predicted, LIVE["placements"])
    assert result["compared"] == len(tasks) >= 200
    assert result["differences"] == []
    assert (result["node_agreement"], result["card_agreement"]) == (1.0, 1.0)
    shapes = {t.gres.split(":")[0] or "cpu" for t in tasks}
    assert shapes == {"gpu", "shard", "npu", "cpu"}
    assert any(t.gres.startswith("gpu:") and t.gres != "gpu:1" for t in tasks)  # multi-card
    assert any("vir" in t.gres for t in tasks)  # vNPUs
    assert 0 < sum(p["node"] is None for p in predicted) < len(tasks) // 4  # some fit nowhere


def test_slurm_alone_would_place_the_slice_elsewhere() -> None:
    """The baseline: no daemon (first node by Weight). The agreement is the daemon's doing."""
    tasks = load_slice(DATA / "lab_live_slice.csv")
    alone = predict_live(load_nodes(DATA / "lab_nodes.json"), tasks, daemon=False)
    assert agreement(alone, LIVE["placements"])["node_agreement"] < 0.8


@pytest.mark.parametrize("key", ["card_choices", "probe"])
def test_recorded_card_choices_are_the_model(key: str) -> None:
    seen = OBSERVED[key]
    assert seen
    assert [s["cards"] for s in seen] == [s["model"] for s in seen]


def test_the_recorded_probe_refutes_the_other_rules() -> None:
    probe = OBSERVED["probe"]
    assert any(p["cards"] != p["tightest"] for p in probe)
    assert any(p["least_used"] and p["cards"] != p["least_used"] for p in probe)


@pytest.mark.parametrize(
    ("request_", "want"),
    [
        pytest.param(Request(2000, 1000, 460, 1), ["--gres=shard:15"], id="share-rounds-up"),
        pytest.param(Request(2000, 1000, 990, 1), ["--gres=gpu:1"], id="32-shards-is-a-card"),
        pytest.param(Request(2000, 1000, 1000, 2), ["--gres=gpu:2"], id="whole-cards"),
        pytest.param(Request(2000, 1000), [], id="cpu-only"),
    ],
)
def test_sbatch_resources(request_: Request, want: list[str]) -> None:
    opts = sbatch_resources(Task("t", request_))
    assert opts[:2] == ["--cpus-per-task=2", "--mem=1000M"]
    assert opts[2:] == want


def test_sbatch_resources_round_cpus_up() -> None:
    assert sbatch_resources(Task("t", Request(2500, 10)))[0] == "--cpus-per-task=3"


def test_typical_node_is_the_commonest_gpu_shape() -> None:
    nodes = [
        NodeSpec("a", 96000, 393216, 8, "G2"),
        NodeSpec("b", 96000, 393216, 8, "G2"),
        NodeSpec("c", 32000, 131072, 4, "V100"),
        NodeSpec("d", 64000, 262144, 0, ""),
        NodeSpec("e", 64000, 262144, 0, ""),
        NodeSpec("f", 64000, 262144, 0, ""),
    ]
    assert typical_node(nodes).name == "a"
    with pytest.raises(ValueError, match="no GPU nodes"):
        typical_node(nodes[3:])


def test_scale_slice_keeps_gpu_tasks_that_fit_and_scales_per_card() -> None:
    ref = NodeSpec("ref", 96000, 393216, 8, "G2")  # 12 CPUs and 48 GiB per card
    tasks = [
        Task("cpu", Request(4000, 1024)),
        Task("share", Request(12000, 49152, 460, 1, ("G2",)), "LS"),
        Task("eight", Request(88000, 327680, 1000, 8)),
        Task("two", Request(1000, 100, 1000, 2)),
        Task("late", Request(1000, 100, 500, 1)),
    ]
    out = scale_slice(tasks, LAB[0], ref, count=2)
    assert [t.name for t in out] == ["share", "two"]  # CPU-only and 8-card tasks skipped
    share = out[0].request
    assert share.cpu_milli == 4000  # 12 CPUs x 4/12, whole CPUs
    assert share.mem_mib == 16000  # 48 GiB x 16000/49152
    assert share.gpu_models == ()  # the lab has one model
    assert out[0].qos == "LS"
    assert out[1].request.cpu_milli == 1000  # at least one CPU
    assert [t.name for t in scale_slice(tasks, LAB[0], ref, count=5, start=4)] == ["late"]
    with pytest.raises(ValueError, match="need GPUs"):
        scale_slice(tasks, NodeSpec("cpu", 1000, 1000, 0, ""), ref, count=1)


def test_write_tasks_reads_back(tmp_path: Path) -> None:
    tasks = [
        Task("a", Request(2000, 100, 460, 1, ("T4", "V100")), "BE"),
        Task("b", Request(1000, 50)),
    ]
    path = tmp_path / "slice.csv"
    write_tasks(tasks, path)
    back = load_tasks(path)
    assert [(t.name, t.request, t.qos) for t in back] == [(t.name, t.request, t.qos) for t in tasks]


def test_model_cards_reads_the_node_as_slurm_reports_it() -> None:
    node = NodeInfo("gpu1", gpus=4, gpu_type="a100", card_used=(20, 16, 30, 0))
    assert model_cards(Request(1000, 1, 62, 1), node) == (0,)  # 2 shards: lowest with room
    assert model_cards(Request(1000, 1, 1000, 1), node) == (3,)
    assert model_cards(Request(1000, 1, 1000, 2), node) == ()


def test_cli_slice_predict_agree(tmp_path: Path) -> None:
    """The commands chained as an operator would: slice a trace for the lab, predict it,
    compare with what the lab did."""
    from click.testing import CliRunner

    from sim.cli import cli

    out = CliRunner().invoke(cli, ["slice", "--pods", str(DATA / "pods.csv"), "--count", "12"])
    assert out.exit_code == 0, out.output
    path = tmp_path / "slice.csv"
    path.write_text(out.output)
    sliced = load_slice(path)
    assert len(sliced) == 12
    assert [t.step for t in sliced] == [k // 3 for k in range(12)]
    assert all(t.leaves > t.step for t in sliced)
    bad = CliRunner().invoke(
        cli,
        ["predict", "--nodes", str(DATA / "lab_nodes.json"), "--slice", str(DATA / "pods.csv")],
    )
    assert bad.exit_code != 0
    assert "missing column" in bad.output

    nodes = str(DATA / "lab_nodes.json")
    live = str(DATA / "lab_live_slice.csv")
    pred = CliRunner().invoke(cli, ["predict", "--nodes", nodes, "--slice", live])
    assert pred.exit_code == 0, pred.output
    (tmp_path / "p.json").write_text(pred.output)
    (tmp_path / "o.json").write_text(json.dumps(LIVE["placements"]))
    agree = CliRunner().invoke(cli, ["agree", str(tmp_path / "p.json"), str(tmp_path / "o.json")])
    assert agree.exit_code == 0, agree.output
    assert json.loads(agree.output)["node_agreement"] == 1.0


class _Jobs:
    """A client whose one job is seen as ``states`` in turn, then as the last of them."""

    def __init__(self, *states: dict[str, object]) -> None:
        self.states = list(states)

    def job(self, job_id: int) -> Job:
        doc = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        return parse.job({"job_id": job_id, "name": "probe", **doc})


def test_a_probe_deferred_for_the_daemon_is_not_yet_judged() -> None:
    """24.11 shows a deferred job's reason as BeginTime before the daemon has placed it."""
    deferred = {
        "job_state": "PENDING",
        "state_reason": "BeginTime",
        "eligible_time": int(time.time()) + 60,
        "admin_comment": job_labels.encode({"placement": "deferred"}),
    }
    running = {"job_state": "RUNNING", "state_reason": "None"}
    client = _Jobs(deferred, deferred, running)
    assert _settle(client, 1, 5).is_running  # type: ignore[arg-type]
    refused = {"job_state": "PENDING", "state_reason": "Resources"}
    assert _settle(_Jobs(refused), 2, 5).reason == "Resources"  # type: ignore[arg-type]
