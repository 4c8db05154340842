"""Cards, shards, NPUs and vNPUs counted one way: whole cards, shards as fractions of their
card, vNPUs as their template's share; free only where new work may go."""

from __future__ import annotations

from fractions import Fraction as F
from pathlib import Path
from typing import Any

import pytest

from slurm_plugins.client import parse
from slurm_plugins.client.capacity import (
    Amount,
    Held,
    by_partition,
    held,
    node_capacity,
    npu_share,
    of_nodes,
    shards_per_card,
)
from slurm_plugins.client.models import Gres, Node, NodeState, Tres

DATA = Path(__file__).resolve().parents[2] / "data" / "slurm" / "22.05"
A100 = (Gres("gpu", "a100", 4), Gres("shard", "a100", 128))
NPU2 = (Gres("npu", "910b", 2), Gres("npu", "910b_vir05", 4), Gres("npu", "910b_vir10", 2))


def gpu_node(
    used: tuple[Gres, ...] = (),
    tres: dict[str, int] | None = None,
    *,
    name: str = "gpu1",
    flags: frozenset[str] = frozenset(),
    state: NodeState = NodeState.MIXED,
) -> Node:
    return Node(
        name,
        state,
        flags=flags,
        cpus=16,
        alloc_cpus=2,
        real_memory=64000,
        alloc_memory=2000,
        gres=A100,
        gres_used=used,
        partitions=("gpu",),
        tres_used=Tres(tres or {}),
    )


# (what runs, GresUsed, allocated TRES) -> cards used, whole cards free, shards used / free
GPU_CASES = [
    ("idle", (), {}, F(0), 4, 0, 128),
    (
        "one 8-shard job (the case that read 255/256 and 0/8)",
        (Gres("gpu", "a100", 0, "N/A"), Gres("shard", "a100", 1, "0")),
        {"gres/shard": 8},
        F(1, 4),
        3,
        8,
        120,
    ),
    (
        "a whole card and 8 shards on another",
        (Gres("gpu", "a100", 1, "1"), Gres("shard", "a100", 1, "0")),
        {"gres/gpu": 1, "gres/gpu:a100": 1, "gres/shard": 8},
        F(5, 4),
        2,
        8,
        88,
    ),
    (
        "shards of two jobs on one card",
        (Gres("gpu", "a100", 0, "N/A"), Gres("shard", "a100", 1, "2")),
        {"gres/shard": 40},
        F(40, 32),
        3,
        40,
        88,
    ),
    (
        "no IDX: cards busy with shards estimated by rounding up",
        (Gres("gpu", "a100", 2, ""), Gres("shard", "a100", 1, "")),
        {"gres/gpu:a100": 2, "gres/shard": 40},
        2 + F(40, 32),
        0,
        40,
        24,
    ),
    (
        "every card whole",
        (Gres("gpu", "a100", 4, "0-3"), Gres("shard", "a100", 0, "N/A")),
        {"gres/gpu": 4, "gres/gpu:a100": 4},
        F(4),
        0,
        0,
        0,
    ),
]


@pytest.mark.parametrize("case", GPU_CASES, ids=[c[0] for c in GPU_CASES])
def test_gpu_cards_count_shards_as_fractions(case: tuple[Any, ...]) -> None:
    _, used, tres, cards_used, whole_free, shards_used, shards_free = case
    (gpus,) = node_capacity(gpu_node(used, tres)).cards
    assert (gpus.kind, gpus.model) == ("gpu", "a100")
    assert gpus.cards == Amount(F(4), cards_used, 4 - cards_used)
    assert gpus.whole_free == whole_free
    assert gpus.shards == Amount(F(128), F(shards_used), F(shards_free))
    assert gpus.slices[0].share == F(1, 32)


def test_vnpus_count_as_their_share_of_a_card() -> None:
    node = Node(
        "npu2",
        NodeState.MIXED,
        cpus=16,
        gres=NPU2,
        gres_used=(
            Gres("npu", "910b", 2, "0-1"),
            Gres("npu", "910b_vir05", 1, "2"),
            Gres("npu", "910b_vir10", 0, "N/A"),
        ),
        partitions=("npu",),
        tres_used=Tres({"gres/npu": 3, "gres/npu:910b": 2, "gres/npu:910b_vir05": 1}),
    )
    (npus,) = node_capacity(node).cards
    assert (npus.kind, npus.model) == ("npu", "910b")
    # 2 whole chips + 4 quarters + 2 halves = 4 cards; Slurm's gres/npu says 8
    assert npus.cards == Amount(F(4), F(9, 4), F(7, 4))
    assert npus.whole_free == 0
    assert npus.slice("910b_vir05") is not None
    assert npus.slice("910b_vir05").units == Amount(F(4), F(1), F(3))  # type: ignore[union-attr]
    assert npus.slice("910b_vir10").units == Amount(F(2), F(0), F(2))  # type: ignore[union-attr]
    assert npus.vnpus == Amount(F(6), F(1), F(5))
    assert npus.shards == Amount()


@pytest.mark.parametrize(
    "blocked",
    [
        {"state": NodeState.DOWN},
        {"flags": frozenset({"DRAIN"})},
        {"flags": frozenset({"NOT_RESPONDING"})},
    ],
)
def test_a_node_that_takes_no_new_work_has_nothing_free(blocked: dict[str, object]) -> None:
    cap = node_capacity(
        gpu_node((Gres("shard", "a100", 1, "0"),), {"gres/shard": 8}, **blocked)  # type: ignore[arg-type]
    )
    gpus = cap.gpus
    assert (gpus.cards.used, gpus.cards.free, gpus.whole_free) == (F(1, 4), F(0), 0)
    assert gpus.cards.unavailable == F(15, 4)
    assert gpus.shards.free == 0
    assert cap.cpus == Amount(F(16), F(2), F(0))


def test_the_recorded_lab_nodes_add_up_per_node_partition_and_pool() -> None:
    nodes = parse.nodes((DATA / "sinfo.json").read_text())
    pool = of_nodes(nodes)
    # gpu1: 2 whole + 8 shards (card 2); gpu2: 32 shards on card 0; npu1: 3 of 8
    assert pool.gpus.cards == Amount(F(8), F(2) + F(8, 32) + F(1), F(8) - F(13, 4))
    assert pool.gpus.whole_free == 1 + 3
    assert pool.gpus.shards == Amount(F(256), F(40), F(256 - 40 - 64))
    assert pool.npus.cards == Amount(F(8), F(3), F(5))
    assert pool.cpus.total == sum(n.cpus for n in nodes)
    parts = by_partition(nodes)
    assert set(parts) == {"cpu", "gpu", "npu"}
    assert parts["gpu"].gpus == pool.gpus
    assert parts["npu"].npus == pool.npus
    assert parts["cpu"].cards == ()
    assert sum(p.nodes for p in parts.values()) == len(nodes) == pool.nodes
    assert pool.gpus.cards.ratio == pytest.approx(13 / 32)


def test_a_node_in_two_partitions_counts_in_each_but_once_in_the_pool() -> None:
    node = gpu_node()
    both = Node(**{**{f: getattr(node, f) for f in node.__slots__}, "partitions": ("a", "b")})
    parts = by_partition([both])
    assert parts["a"].gpus.cards.total == parts["b"].gpus.cards.total == 4
    assert of_nodes([both]).gpus.cards.total == 4


@pytest.mark.parametrize(
    ("tres", "per_card", "expected"),
    [
        ({"gres/gpu": 2, "gres/gpu:a100": 2}, 32, [Held("gpu", "a100", 2, F(1))]),
        ({"gres/gpu": 1}, 32, [Held("gpu", "", 1, F(1))]),
        ({"gres/shard": 8}, 32, [Held("shard", "", 8, F(1, 32))]),
        ({"gres/shard": 8}, 16, [Held("shard", "", 8, F(1, 16))]),
        (
            {"gres/npu": 3, "gres/npu:910b": 2, "gres/npu:910b_vir05": 1},
            32,
            [Held("npu", "910b", 2, F(1)), Held("vnpu", "910b_vir05", 1, F(1, 4))],
        ),
        ({"gres/npu": 2}, 32, [Held("npu", "", 2, F(1))]),
        ({"cpu": 4, "mem": 1000}, 32, []),
    ],
)
def test_what_a_job_holds_in_cards(
    tres: dict[str, int], per_card: int, expected: list[Held]
) -> None:
    assert list(held(Tres(tres), per_card)) == expected


def test_shares_and_shards_per_card() -> None:
    assert npu_share("910b_vir10") == ("910b", F(1, 2))
    assert npu_share("910b") == ("910b", F(1))
    assert npu_share("x_unknown") == ("x_unknown", F(1))
    assert shards_per_card(gpu_node()) == 32
    assert shards_per_card(None) == 32
    assert Held("shard", "", 8, F(1, 32)).cards == F(1, 4)
