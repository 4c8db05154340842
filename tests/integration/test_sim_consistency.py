"""The simulator against the lab: a slice of the default trace in every shape the placement
daemon places (whole and several GPUs, shares, NPUs and vNPUs, CPU work on GPU nodes), with
departures, run through the real admission hook, a placement daemon and slurmctld, lands
where the live rules (``sim.labslice.predict_live``) say; and slurmctld's own card choice
inside a node is the one the simulator models.

The slice is committed (``tests/data/sim/lab_live_slice.csv``: 210 tasks from task 4000 of
the default trace, see ``bench/sim_consistency.py``), so the test needs no trace on disk.
"""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

import pytest

from aipool.lab import placement
from aipool.lab.cluster import Lab
from sim.consistency import agreement
from sim.labcheck import lab_nodes, probe_cards
from sim.labrun import lab_nodes as live_lab_nodes
from sim.labrun import run_live_slice
from sim.labslice import load_slice, predict_live
from sim.trace import NodeSpec
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.versions import shards_across_cards

pytestmark = pytest.mark.slurm

SLICE = Path(__file__).resolve().parents[1] / "data" / "sim" / "lab_live_slice.csv"


@pytest.fixture
def gpu_nodes(client: SlurmClient) -> list[NodeSpec]:
    nodes = lab_nodes(client)
    # what the committed slice was scaled to: two nodes of 4 cards, 16 CPUs, 64000 MB
    assert [(n.name, n.gpu_count, n.cpu_milli, n.mem_mib) for n in nodes] == [
        ("gpu1", 4, 16000, 64000),
        ("gpu2", 4, 16000, 64000),
    ]
    return nodes


def test_trace_slice_lands_where_the_live_rules_predict(
    lab: Lab, client: SlurmClient, gpu_nodes: list[NodeSpec]
) -> None:
    tasks = load_slice(SLICE)
    nodes = live_lab_nodes(client)
    release = client.release_tuple()
    predicted = predict_live(nodes, tasks, release=release)
    with tempfile.TemporaryDirectory(prefix="sim-consistency-", dir=lab.cfg.jobs) as tmp:
        run = run_live_slice(
            client,
            tasks,
            slurm_conf=lab.cfg.env()["SLURM_CONF"],
            heartbeat=placement.heartbeat(lab),
            state_dir=Path(tmp) / "state",
            workdir=Path(tmp),
            prefix=f"sc{uuid.uuid4().hex[:6]}-",
        )
    result = agreement(predicted, run.placements)
    started = sum(p["node"] is not None for p in run.placements)
    print(
        f"\nlab consistency: {len(tasks)} tasks, {started} started in {run.seconds:.0f} s; "
        f"node agreement {result['node_agreement']:.1%}, cards {result['card_agreement']:.1%}"
    )
    assert result["compared"] == len(tasks) >= 200
    assert result["node_agreement"] >= 0.99, result["differences"]
    assert result["card_agreement"] >= 0.99
    # the slice crowds the lab: some tasks fit nowhere, most start
    assert 0 < len(tasks) - started < started
    # the agreement is the daemon's: Slurm alone would place much of it elsewhere
    alone = agreement(predict_live(nodes, tasks, daemon=False, release=release), run.placements)
    assert alone["node_agreement"] < result["node_agreement"] - 0.2


def test_slurmctld_card_choice_is_the_modelled_one(
    lab: Lab, client: SlurmClient, gpu_nodes: list[NodeSpec]
) -> None:
    seen = probe_cards(
        client,
        gpu_nodes[0],
        prefix=f"cp{uuid.uuid4().hex[:6]}-",
        workdir=lab.cfg.jobs,
        release=client.release_tuple(),
    )
    for s in seen:
        print(f"\n{s['request']}: free {s['free_before']} -> cards {s['cards']}", end="")
    assert [s["cards"] for s in seen] == [s["model"] for s in seen]
    # the probe tells the candidate rules apart: lowest card with room, not the tightest
    # fit nor the least used card
    assert any(s["model"] != s["tightest"] for s in seen)
    assert any(s["least_used"] and s["model"] != s["least_used"] for s in seen)
    # a request no card has room for, with enough shards free on the node: pending on
    # 22.05; taken from several cards on 23.11+ (MULTIPLE_SHARING_GRES_PJ)
    last = seen[-1]
    wanted = int(last["request"].removeprefix("shard:"))
    assert sum(last["free_before"]) >= wanted > max(last["free_before"])
    if shards_across_cards(client.release_tuple()):
        assert len(last["cards"]) > 1
    else:
        assert last["cards"] == []
