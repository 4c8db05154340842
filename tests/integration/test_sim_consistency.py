"""The simulator against the lab: a scaled-down slice of the default trace, submitted in order
through the policy daemon's placement steering, lands where ``sim predict`` says; and
slurmctld's own card choice inside a node is the one the simulator models.

The slice is committed (``tests/data/sim/lab_slice.csv``: tasks 4416 to 4436 of the default
trace, CPU and memory scaled to the lab's GPU nodes, see ``bench/sim_consistency.py``), so
the test needs no trace on disk.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from aipool.lab.cluster import Lab
from sim.consistency import agreement, predict
from sim.labcheck import lab_nodes, probe_cards, run_slice
from sim.trace import NodeSpec, load_tasks
from slurm_plugins.client import SlurmClient

pytestmark = pytest.mark.slurm

SLICE = Path(__file__).resolve().parents[1] / "data" / "sim" / "lab_slice.csv"


@pytest.fixture
def gpu_nodes(client: SlurmClient) -> list[NodeSpec]:
    nodes = lab_nodes(client)
    # what the committed slice was scaled to: two nodes of 4 cards, 16 CPUs, 64000 MB
    assert [(n.name, n.gpu_count, n.cpu_milli, n.mem_mib) for n in nodes] == [
        ("gpu1", 4, 16000, 64000),
        ("gpu2", 4, 16000, 64000),
    ]
    return nodes


def test_trace_slice_lands_where_the_simulator_predicts(
    lab: Lab, client: SlurmClient, gpu_nodes: list[NodeSpec], tmp_path: Path
) -> None:
    tasks = load_tasks(SLICE)
    predicted = predict(gpu_nodes, tasks)
    run = run_slice(
        client,
        tasks,
        slurm_conf=lab.cfg.env()["SLURM_CONF"],
        state_dir=tmp_path / "state",
        workdir=lab.cfg.jobs,
        prefix=f"sc{uuid.uuid4().hex[:6]}-",
    )
    result = agreement(predicted, run.placements)
    started = sum(p["node"] is not None for p in run.placements)
    print(
        f"\nlab consistency: {len(tasks)} tasks, {started} started in {run.seconds:.0f} s; "
        f"node agreement {result['node_agreement']:.0%}, cards {result['card_agreement']:.0%}"
    )
    assert result["compared"] == len(tasks)
    assert result["differences"] == []
    assert result["node_agreement"] == 1.0
    assert result["card_agreement"] == 1.0
    # the slice fills the lab: some tasks fit nowhere, as predicted, and most start
    assert 0 < len(tasks) - started < started
    # slurmctld's card choice on every start, against the node as it was just before
    assert run.card_choices
    assert [c["cards"] for c in run.card_choices] == [c["model"] for c in run.card_choices]


def test_slurmctld_card_choice_is_the_modelled_one(
    lab: Lab, client: SlurmClient, gpu_nodes: list[NodeSpec]
) -> None:
    seen = probe_cards(
        client, gpu_nodes[0], prefix=f"cp{uuid.uuid4().hex[:6]}-", workdir=lab.cfg.jobs
    )
    for s in seen:
        print(f"\n{s['request']}: free {s['free_before']} -> cards {s['cards']}", end="")
    assert [s["cards"] for s in seen] == [s["model"] for s in seen]
    # the probe tells the candidate rules apart: lowest card with room, not the tightest
    # fit nor the least used card
    assert any(s["model"] != s["tightest"] for s in seen)
    assert any(s["least_used"] and s["model"] != s["least_used"] for s in seen)
    # a share of a card never spans cards, even with enough shards free on the node
    last = seen[-1]
    wanted = int(last["request"].removeprefix("shard:"))
    assert sum(last["free_before"]) >= wanted > max(last["free_before"])
    assert last["cards"] == []
