"""Scores of the baselines, FGD's fragmentation measure and AIPool's scorers."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gres.placement import SCORERS, NodeView, Request, Shape, Workload, fits, node_frag, place
from gres.placement_frag import aipool_frag, score_aipool_slurm
from tests.unit.gres.test_placement import FULL, node, share, whole

ONLY_WHOLE = Workload.from_weights({Shape(0, FULL, 1): 1.0})
HALVES_AND_WHOLE = Workload.from_weights({Shape(0, 500, 1): 1.0, Shape(0, FULL, 1): 1.0})


def score(name: str, request: Request, view: NodeView, workload: Workload = ONLY_WHOLE) -> float:
    return SCORERS[name].score(request, view, workload)


@pytest.mark.parametrize(
    ("name", "request_", "view", "expected"),
    [
        # 1 - (0.5 * 60000/128000 + 0.5 * 3000/8000) = 0.578 -> 57
        ("best-fit", whole(1, cpu=4_000), node(), 57),
        ("best-fit", whole(4, cpu=64_000), node(), 100),
        # 1 - (0.5*0.03125*0.5 + 4/8*1/8)/2 = 0.965 -> 96
        ("dot-product", whole(1, cpu=4_000), node(), 96),
        ("gpu-packing", Request(1000, 1), node(), 0),
        ("gpu-packing", whole(1), node(), 29),  # idle node: 33 - 4 free cards
        ("gpu-packing", whole(1), node(free=(FULL, FULL, 500, FULL)), 49),  # a used node
        ("gpu-packing", share(300), node(free=(FULL, 400, FULL, FULL)), 96),  # a shared card
        ("gpu-clustering", Request(1000, 1), node(), 0),
        ("gpu-clustering", share(300), node(), 37),  # idle node: 25 + 25 * 4000 / 8000
        ("gpu-clustering", share(300), node(free=(0,) * 4, kinds=frozenset({"share-gpu"})), 100),
        (
            "gpu-clustering",
            share(300),
            node(free=(0, FULL, FULL, FULL), kinds=frozenset({"share-gpu", "1-gpu"})),
            65,
        ),
        ("gpu-clustering", share(300), node(kinds=frozenset({"1-gpu"})), 12),
    ],
)
def test_baseline_scores(name: str, request_: Request, view: NodeView, expected: float) -> None:
    assert score(name, request_, view) == expected


@pytest.mark.parametrize(
    ("free", "cpu", "workload", "expected"),
    [
        ((FULL, 300), 64_000, HALVES_AND_WHOLE, 300),  # only the 300 card is too small
        ((500, 500), 64_000, HALVES_AND_WHOLE, 500),  # no whole card: all 1000 for half the mix
        ((FULL,), 64_000, Workload.from_weights({Shape(0, 0, 0): 1.0}), FULL),  # CPU tasks
        ((FULL,), 1_000, Workload.from_weights({Shape(2_000, 500, 1): 1.0}), FULL),  # no CPU
        ((FULL,), 64_000, Workload.from_weights({Shape(0, 500, 1, ("T4",)): 1.0}), FULL),
        ((0, 0), 64_000, HALVES_AND_WHOLE, 0),
    ],
)
def test_node_frag(free: tuple[int, ...], cpu: int, workload: Workload, expected: float) -> None:
    assert node_frag(node(free=free, cpu=cpu), workload) == pytest.approx(expected)


def test_fgd_fills_the_partial_card_and_says_which() -> None:
    view = node(free=(FULL, 500))
    fgd = SCORERS["fgd"]
    assert fgd.score(share(500), view, ONLY_WHOLE) == 62  # int(100 * sigmoid(0.5))
    assert fgd.cards(share(500), view, ONLY_WHOLE, None) == (1,)
    ideal = SCORERS["aipool-ideal"]
    assert ideal.cards(share(500), view, ONLY_WHOLE, None) == (1,)


def test_aipool_live_scores_the_card_slurm_picks() -> None:
    view = node(free=(FULL, 500))
    live = score_aipool_slurm(share(500), view, ONLY_WHOLE)  # slurm takes card 0
    ideal = SCORERS["aipool-ideal"].score(share(500), view, ONLY_WHOLE)
    assert live == -500 / 25  # fragmentation grows by 500 milli, in 25-milli steps
    assert ideal == 500 / 25
    assert SCORERS["aipool"].cards(share(500), view, ONLY_WHOLE, None) == (0,)


def test_fgd_sends_a_half_to_the_node_it_fragments_least() -> None:
    nodes = [node("a", free=(FULL, FULL)), node("b", free=(FULL, 500))]
    for name in ("fgd", "aipool", "aipool-ideal", "best-fit"):
        chosen = max(nodes, key=lambda n: (score(name, share(500), n, HALVES_AND_WHOLE), n.name))
        assert chosen.name == "b", name


free_lists = st.lists(st.integers(0, FULL), min_size=0, max_size=8).map(tuple)
requests = st.one_of(
    st.builds(lambda c: Request(c, 1), st.integers(0, 70_000)),
    st.builds(lambda c, m: share(m, cpu=c), st.integers(0, 70_000), st.integers(1, FULL - 1)),
    st.builds(lambda c, n: whole(n, cpu=c), st.integers(0, 70_000), st.integers(1, 8)),
)
workloads = st.sampled_from([ONLY_WHOLE, HALVES_AND_WHOLE])


@given(free=free_lists, request_=requests, workload=workloads, cpu=st.integers(0, 64_000))
def test_every_scorer_picks_cards_that_hold_the_request(
    free: tuple[int, ...], request_: Request, workload: Workload, cpu: int
) -> None:
    view = node(free=free, cpu=cpu)
    if not fits(request_, view):
        return
    for scorer in SCORERS.values():
        cards = scorer.cards(request_, view, workload, random.Random(0))  # noqa: S311
        assert len(cards) == request_.gpu_count, scorer.name
        after = place(request_, view, cards)  # raises if a card is too small
        assert after.gpu_free_total == view.gpu_free_total - request_.total_gpu_milli
        assert scorer.score(request_, view, workload) == scorer.score(request_, view, workload)


@pytest.mark.parametrize(
    ("cpu", "mem", "free", "expected"),
    [
        (64_000, 262_144, (FULL, FULL), 0),  # enough CPU and memory for both cards
        (10_000, 262_144, (FULL, FULL), 2 * (2000 - 1000)),  # CPU feeds one card of two
        (64_000, 4_096, (FULL, FULL), 2 * (2000 - 500)),  # memory feeds half a card
        (0, 0, (0, 0), 0),  # nothing free, nothing stranded
    ],
)
def test_aipool_frag_counts_stranded_cards(
    cpu: int, mem: int, free: tuple[int, ...], expected: float
) -> None:
    wl = Workload(ONLY_WHOLE.shapes, cpu_per_gpu_milli=10.0, mem_per_gpu_milli=8.192)
    view = NodeView("n", "A100", cpu, mem, free, 64_000, 262_144)
    assert aipool_frag(view, wl) - node_frag(view, wl) == pytest.approx(expected)


def test_workload_learns_cpu_and_memory_per_gpu_milli() -> None:
    wl = Workload.from_requests([whole(1, cpu=8_000), share(500, cpu=4_000), Request(9, 9)])
    assert wl.cpu_per_gpu_milli == pytest.approx(12_000 / 1500)
    assert wl.mem_per_gpu_milli == pytest.approx((16_384 + 8_192) / 1500)


@given(free=free_lists, workload=workloads, cpu=st.integers(0, 64_000))
def test_frag_is_between_zero_and_the_free_capacity(
    free: tuple[int, ...], workload: Workload, cpu: int
) -> None:
    frag = node_frag(node(free=free, cpu=cpu), workload)
    assert -1e-9 <= frag <= sum(free) + 1e-9
