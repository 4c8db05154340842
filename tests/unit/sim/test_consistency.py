"""The consistency check's pure side: slicing and scaling a trace, the live model of
placement (pins for shares, Weight for the rest, slurmctld's card), against what the lab did
(recorded in ``tests/data/sim/lab_observed.json`` by ``bench/sim_consistency.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gres.placement import Request
from sim.cluster import SHARDS, Cluster
from sim.consistency import (
    agreement,
    predict,
    sbatch_resources,
    scale_slice,
    typical_node,
    write_tasks,
)
from sim.labcheck import model_cards
from sim.placer import by_weight
from sim.trace import NodeSpec, Task, load_tasks
from slurm_plugins.policy.snapshot import NodeInfo
from tests.unit.sim.conftest import DATA

LAB = [NodeSpec("gpu1", 16000, 64000, 4, "a100"), NodeSpec("gpu2", 16000, 64000, 4, "a100")]
OBSERVED = json.loads((DATA / "lab_observed.json").read_text())


def test_the_committed_slice_lands_as_the_lab_placed_it() -> None:
    """Recorded on the lab: every task on the predicted node and cards."""
    predicted = predict(LAB, load_tasks(DATA / "lab_slice.csv"))
    result = agreement(predicted, OBSERVED["placements"])
    assert result["compared"] == 16
    assert result["differences"] == []
    assert (result["node_agreement"], result["card_agreement"]) == (1.0, 1.0)


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


def test_unpinned_work_goes_to_the_fuller_node_then_the_lower_name() -> None:
    cluster = Cluster(LAB, SHARDS)
    whole = Request(1000, 100, 1000, 1)
    assert by_weight(cluster, whole) == (0, (0,))  # equal weights: lowest name
    cluster.allocate(1, Request(1000, 100, 1000, 2), (0, 1))  # gpu2 half full
    assert by_weight(cluster, whole) == (1, (2,))  # fuller first, lowest free card
    cluster.allocate(1, Request(1000, 100, 1000, 2), (2, 3))  # gpu2 full
    assert by_weight(cluster, whole) == (0, (0,))
    cluster.allocate(0, Request(1000, 100, 1000, 4), (0, 1, 2, 3))
    assert by_weight(cluster, whole) is None


def test_predict_pins_shares_but_lets_weight_place_whole_cards() -> None:
    """A whole card follows Weight (the fuller node), not the scorer; a share follows the
    scorer; a task that fits nowhere fails and leaves the daemon's workload."""
    tasks = [
        Task("s1", Request(1000, 100, 500, 1)),
        Task("big", Request(1000, 100, 1000, 8)),
        Task("w1", Request(1000, 100, 1000, 1)),
        Task("s2", Request(1000, 100, 500, 1)),
    ]
    got = predict(LAB, tasks)
    assert [(p["node"], p["cards"]) for p in got] == [
        ("gpu1", [0]),
        (None, []),
        ("gpu1", [1]),  # gpu1 holds a share: fuller, so a lower Weight
        ("gpu1", [0]),  # slurmctld's card: the lowest with room
    ]


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

    lab = str(DATA / "lab_nodes.csv")
    args = ["slice", "--nodes", str(DATA / "nodes.csv"), "--pods", str(DATA / "pods.csv")]
    out = CliRunner().invoke(cli, [*args, "--lab", lab, "--count", "5"])
    assert out.exit_code == 0, out.output
    path = tmp_path / "slice.csv"
    path.write_text(out.output)
    sliced = load_tasks(path)
    assert len(sliced) == 5
    assert all(t.request.gpu_count and t.request.cpu_milli % 1000 == 0 for t in sliced)
    bad = CliRunner().invoke(cli, [*args, "--lab", str(DATA / "pods.csv")])
    assert bad.exit_code != 0
    assert "missing column" in bad.output

    pred = CliRunner().invoke(
        cli, ["predict", "--nodes", lab, "--pods", str(DATA / "lab_slice.csv")]
    )
    assert pred.exit_code == 0, pred.output
    (tmp_path / "p.json").write_text(pred.output)
    (tmp_path / "o.json").write_text(json.dumps(OBSERVED["placements"]))
    agree = CliRunner().invoke(cli, ["agree", str(tmp_path / "p.json"), str(tmp_path / "o.json")])
    assert agree.exit_code == 0, agree.output
    assert json.loads(agree.output)["node_agreement"] == 1.0
