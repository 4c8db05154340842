"""Fragmentation of a node against a workload, the FGD scorer and AIPool's own scorer.

FGD (Weng et al., USENIX ATC'23) measures how much of a node's free GPU capacity the expected
tasks could *not* use. For each task shape of the :class:`Workload` with probability ``p``:

* if the shape cannot run on the node at all — it needs no GPU, needs another GPU model, lacks
  CPU, or lacks enough cards with room — all free GPU milli of the node count as fragment;
* otherwise only the free milli of cards too small for the shape count.

The node's fragmentation is the ``p``-weighted sum. FGD places a task where fragmentation
grows least (it "descends the gradient"), scored as kube-scheduler integers
``int(100 · sigmoid(Δ/1000))``; the card inside the node is chosen the same way.

AIPool's scorer keeps FGD's measure but compares exact values instead of 0-100 integers, so
near-ties are decided by the real difference rather than at random, and breaks exact ties by
the least GPU then CPU left over (best fit). It can evaluate the card slurmctld will really
pick (live) or the card it would pick itself (ideal).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

from gres.placement_cards import cards_slurm, whole_cards
from gres.placement_model import NodeView, Request, Workload

#: Scores of FGD are kube-scheduler integers in 0..100.
MAX_SCORE = 100
#: Weight of the best-fit tie-break in AIPool's score: far below one milli of fragmentation.
_TIE_WEIGHT = 1e-6

CardRule = Callable[[Request, NodeView], tuple[int, ...]]


def node_frag(node: NodeView, workload: Workload) -> float:
    """Expected fragmented GPU milli of ``node`` under ``workload`` (FGD's ``F_n(M)``)."""
    return _frag(node.gpu_model, node.cpu_milli_free, tuple(sorted(node.gpu_free_milli)), workload)


@lru_cache(maxsize=1 << 18)
def _frag(model: str, cpu_free: int, free: tuple[int, ...], workload: Workload) -> float:
    total = sum(free)
    if total == 0:
        return 0.0
    frag = 0.0
    for shape, p in workload.shapes:
        if shape.gpu_count == 0 or (shape.gpu_models and model not in shape.gpu_models):
            frag += p * total
            continue
        need = shape.gpu_milli
        if cpu_free >= shape.cpu_milli and sum(f >= need for f in free) >= shape.gpu_count:
            frag += p * sum(f for f in free if f < need)
        else:
            frag += p * total
    return frag


def frag_after(
    request: Request, node: NodeView, cards: tuple[int, ...], workload: Workload
) -> float:
    """Fragmentation of ``node`` once ``request`` holds ``cards`` on it (memory is not used)."""
    free = list(node.gpu_free_milli)
    for card in cards:
        free[card] -= request.gpu_milli
    cpu = node.cpu_milli_free - request.cpu_milli
    return _frag(node.gpu_model, cpu, tuple(sorted(free)), workload)


def _fgd_int(delta: float) -> int:
    """kube-scheduler score of a fragmentation decrease of ``delta`` milli."""
    return int(MAX_SCORE / (1.0 + math.exp(-delta / 1000.0)))


def _fgd_best(request: Request, node: NodeView, workload: Workload) -> tuple[int, tuple[int, ...]]:
    before = node_frag(node, workload)
    if not request.is_fractional:
        cards = whole_cards(request, node) if request.gpu_count else ()
        return _fgd_int(before - frag_after(request, node, cards, workload)), cards
    best_score, best_card = -1, -1
    seen: set[int] = set()
    for index, free in enumerate(node.gpu_free_milli):
        if free < request.gpu_milli or free in seen:  # equal free → equal result
            continue
        seen.add(free)
        score = _fgd_int(before - frag_after(request, node, (index,), workload))
        if score > best_score:
            best_score, best_card = score, index
    return best_score, ((best_card,) if best_card >= 0 else ())


def score_fgd(request: Request, node: NodeView, workload: Workload) -> float:
    """FGD's node score: the best card's ``int(100 · sigmoid(Δfrag / 1000))``."""
    return float(_fgd_best(request, node, workload)[0])


def cards_fgd(request: Request, node: NodeView, workload: Workload) -> tuple[int, ...]:
    """FGD's card: the one whose use raises fragmentation least (lowest index on ties)."""
    return _fgd_best(request, node, workload)[1]


def _aipool_best(
    request: Request, node: NodeView, workload: Workload
) -> tuple[float, tuple[int, ...]]:
    """Exact frag growth (negated) for the best card, tie-broken by tightest fit."""
    before = node_frag(node, workload)
    if not request.is_fractional:
        cards = whole_cards(request, node) if request.gpu_count else ()
        return before - frag_after(request, node, cards, workload), cards
    best: tuple[float, tuple[int, ...]] = (-math.inf, ())
    seen: set[int] = set()
    for index, free in enumerate(node.gpu_free_milli):
        if free < request.gpu_milli or free in seen:
            continue
        seen.add(free)
        gain = before - frag_after(request, node, (index,), workload)
        gain -= _TIE_WEIGHT * (free - request.gpu_milli)  # tightest card on equal frag
        if gain > best[0]:
            best = (gain, (index,))
    return best


def _leftover(request: Request, node: NodeView) -> float:
    gpu_left = node.gpu_free_total - request.total_gpu_milli
    cpu_left = node.cpu_milli_free - request.cpu_milli
    return gpu_left / 8_000 + cpu_left / 128_000


def score_aipool(request: Request, node: NodeView, workload: Workload) -> float:
    """AIPool with the ideal card choice: minus the exact fragmentation growth, best fit on ties."""
    gain, _ = _aipool_best(request, node, workload)
    return gain - _TIE_WEIGHT * _leftover(request, node)


def cards_aipool(request: Request, node: NodeView, workload: Workload) -> tuple[int, ...]:
    return _aipool_best(request, node, workload)[1]


def score_aipool_slurm(request: Request, node: NodeView, workload: Workload) -> float:
    """AIPool live: the same measure, for the card slurmctld will actually pick."""
    cards = cards_slurm(request, node)
    gain = node_frag(node, workload) - frag_after(request, node, cards, workload)
    return gain - _TIE_WEIGHT * _leftover(request, node)
