"""Metering: whole cards, shards as fractions of a card, vNPUs, attribution."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest

from accounting.meter import UCARDS, NodeCards, Topology, meter, npu_cards
from slurm_plugins.client import parse
from slurm_plugins.client.models import Association, Gres, JobState, Node, NodeState, Tres
from tests.unit.accounting.builders import acct

DATA = Path(__file__).parents[2] / "data" / "slurm"
TOPO = Topology(
    nodes={"gpu1": NodeCards("a100", 32), "gpu2": NodeCards("h100", 16)},
    domains={"nlp": "research", "cs101": "teaching"},
)


def test_eight_shards_for_two_hours_are_half_a_card_hour() -> None:
    u = meter(acct(1, "cpu=2,mem=4G,gres/shard=8", hours=2), TOPO)
    assert u is not None
    assert u.gpu_type == "a100"
    assert u.gpu_ucards == UCARDS // 4
    assert Fraction(u.gpu_ucs, UCARDS * 3600) == Fraction(1, 2)
    assert u.cpu_s == 2 * 7200
    assert u.mem_mib_s == 4096 * 7200


def test_shards_are_a_fraction_of_the_nodes_own_cards() -> None:
    u = meter(acct(1, "gres/shard=8", nodes="gpu2"), TOPO)
    assert u is not None
    assert (u.gpu_type, u.gpu_ucards) == ("h100", UCARDS // 2)


def test_whole_gpus_take_their_type_from_the_typed_tres() -> None:
    u = meter(acct(1, "gres/gpu=2,gres/gpu:a100=2", hours=3), TOPO)
    assert u is not None
    assert (u.gpu_type, u.gpu_ucards, u.npu_ucards) == ("a100", 2 * UCARDS, 0)
    assert u.gpu_ucs == 6 * 3600 * UCARDS


def test_npus_and_vnpus_are_metered_apart_from_gpus() -> None:
    assert npu_cards(Tres.parse("gres/npu=2,gres/npu:910b_vir05=2")) == ("910b", UCARDS // 2)
    assert npu_cards(Tres.parse("gres/npu=1,gres/npu:910b_vir10=1")) == ("910b", UCARDS // 2)
    assert npu_cards(Tres.parse("gres/npu=3,gres/npu:910b=3")) == ("910b", 3 * UCARDS)
    assert npu_cards(Tres.parse("gres/npu=1")) == ("", UCARDS)
    assert npu_cards(Tres.parse("cpu=4")) == ("", 0)
    u = meter(acct(1, "gres/npu=1,gres/npu:910b=1", partition="npu", nodes="npu1"), TOPO)
    assert u is not None
    assert (u.gpu_ucards, u.gpu_type, u.npu_type, u.npu_ucards) == (0, "", "910b", UCARDS)


def test_attribution_and_wait() -> None:
    u = meter(acct(7, "cpu=1", account="cs101", user="carol", wait_s=90), TOPO)
    assert u is not None
    assert (u.user, u.account, u.domain, u.partition, u.wait_s) == (
        "carol",
        "cs101",
        "teaching",
        "gpu",
        90,
    )
    assert u.finished


def test_a_job_that_never_started_has_no_usage() -> None:
    job = acct(1, "gres/gpu=1")
    assert meter(replace(job, start_time=None, state=JobState.CANCELLED), TOPO) is None


def test_topology_from_slurm_reads_card_models_shards_and_domains() -> None:
    nodes = [
        Node("gpu1", NodeState.IDLE, gres=Gres.parse_list("gpu:a100:4,shard:a100:128")),
        Node("npu1", NodeState.IDLE, gres=Gres.parse_list("npu:910b:8")),
    ]
    assocs = [
        Association("c", "research", parent="root"),
        Association("c", "nlp", parent="research"),
        Association("c", "nlp", user="alice", parent=""),
    ]
    topo = Topology.from_slurm(nodes, assocs)
    assert topo.nodes["gpu1"] == NodeCards("a100", 32)
    assert topo.domain_of("nlp") == "research"
    assert topo.domain_of("research") == "research"
    assert topo.domain_of("unknown") == "unknown"


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_recorded_sacct_output_meters(version: str) -> None:
    jobs = parse.acct_jobs((DATA / version / "sacct.json").read_text())
    used = [u for j in jobs if (u := meter(j, TOPO)) is not None]
    assert used
    by_id = {u.job_id: u for u in used}
    for j in jobs:
        if j.start_time is None:
            assert j.job_id not in by_id
            continue
        u = by_id[j.job_id]
        per = TOPO.node(j.nodes).shards_per_gpu
        cards = Fraction(j.tres_alloc.gpus) + Fraction(j.tres_alloc.shards, per)
        assert Fraction(u.gpu_ucards, UCARDS) == cards
        assert u.elapsed_s == j.elapsed_s
