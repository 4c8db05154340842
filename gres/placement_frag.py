"""Fragmentation of a node against a workload, the FGD scorer and AIPool's own scorer.

FGD (Weng et al., USENIX ATC'23) measures how much of a node's free GPU capacity the expected
tasks could *not* use. For each task shape of the :class:`Workload` with probability ``p``:

* if the shape cannot run on the node at all — it needs no GPU, needs another GPU model, lacks
  CPU, or lacks enough cards with room — all free GPU milli of the node count as fragment;
* otherwise only the free milli of cards too small for the shape count.

The node's fragmentation is the ``p``-weighted sum. FGD places a task where fragmentation
grows least (it "descends the gradient"), scored as kube-scheduler integers
``int(100 · sigmoid(Δ/1000))``; the card inside the node is chosen the same way.

AIPool's scorer adds what FGD leaves out: free cards a node cannot use because its CPU or
memory is gone (*stranded* GPUs, see :func:`aipool_frag`), and it charges CPU and memory of
every task, CPU-only ones included, against that. Gains are compared in 25-milli steps, with
ties going to the lowest node name. It can evaluate the card slurmctld will really pick (live)
or the card it would pick itself (ideal).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from gres.placement_cards import cards_slurm, whole_cards
from gres.placement_model import NodeView, Request, Workload

#: Scores of FGD are kube-scheduler integers in 0..100.
MAX_SCORE = 100

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


@dataclass(frozen=True, slots=True)
class AipoolParams:
    """Knobs of AIPool's scorer; the defaults are what the trace benchmarks were run with."""

    #: Weight of stranded GPU milli (free cards the node's CPU or memory cannot feed).
    stranding: float = 2.0
    #: Gains closer than this (milli) count as equal, so the node order decides: packing
    #: towards low-ordered nodes keeps the others whole (FGD gets the same effect from its
    #: integer scores).
    bucket: float = 25.0


DEFAULT_PARAMS = AipoolParams()


def aipool_frag(node: NodeView, workload: Workload, params: AipoolParams = DEFAULT_PARAMS) -> float:
    """FGD's fragmentation plus ``stranding`` x the GPU milli the node could not feed.

    A node that keeps free cards but too little CPU or memory for the work those cards would
    take wastes them as surely as a sliver of a card does: with ``c`` CPU milli and ``m`` MiB
    per GPU milli on average (from the workload), at most ``min(cpu/c, mem/m)`` of its free
    GPU milli can be used.
    """
    state = (
        node.gpu_model,
        node.cpu_milli_free,
        node.mem_mib_free,
        tuple(sorted(node.gpu_free_milli)),
    )
    return _aipool_frag(state, workload, params)


#: What AIPool's measure depends on: GPU model, free CPU, free memory, sorted free cards.
_State = tuple[str, int, int, tuple[int, ...]]


@lru_cache(maxsize=1 << 18)
def _aipool_frag(state: _State, workload: Workload, params: AipoolParams) -> float:
    model, cpu, mem, free = state
    frag = _frag(model, cpu, free, workload)
    total = sum(free)
    if total and params.stranding:
        fed = float(total)
        if workload.cpu_per_gpu_milli > 0:
            fed = min(fed, cpu / workload.cpu_per_gpu_milli)
        if workload.mem_per_gpu_milli > 0:
            fed = min(fed, mem / workload.mem_per_gpu_milli)
        frag += params.stranding * (total - fed)
    return frag


def _aipool_gain(
    request: Request,
    node: NodeView,
    cards: tuple[int, ...],
    workload: Workload,
    *,
    params: AipoolParams,
    before: float,
) -> float:
    free = list(node.gpu_free_milli)
    for card in cards:
        free[card] -= request.gpu_milli
    cpu = node.cpu_milli_free - request.cpu_milli
    mem = node.mem_mib_free - request.mem_mib
    after = _aipool_frag((node.gpu_model, cpu, mem, tuple(sorted(free))), workload, params)
    return float(math.floor((before - after) / params.bucket))


def aipool_best(
    request: Request,
    node: NodeView,
    workload: Workload,
    params: AipoolParams = DEFAULT_PARAMS,
    card_rule: CardRule | None = None,
) -> tuple[float, tuple[int, ...]]:
    """AIPool's score of ``node`` and the cards it would use.

    ``card_rule`` fixes the card (e.g. :func:`gres.placement_cards.cards_slurm` for what the
    live system will do); otherwise the card with the best score, the tightest on ties.
    """
    before = aipool_frag(node, workload, params)
    if card_rule is not None or not request.is_fractional:
        rule = card_rule or whole_cards
        cards = rule(request, node) if request.gpu_count else ()
        return _aipool_gain(request, node, cards, workload, params=params, before=before), cards
    best: tuple[float, int, tuple[int, ...]] = (-math.inf, 0, ())
    seen: set[int] = set()
    for index, free in enumerate(node.gpu_free_milli):
        if free < request.gpu_milli or free in seen:  # equal free, equal result
            continue
        seen.add(free)
        gain = _aipool_gain(request, node, (index,), workload, params=params, before=before)
        if (gain, -free) > best[:2]:
            best = (gain, -free, (index,))
    return best[0], best[2]


def score_aipool(request: Request, node: NodeView, workload: Workload) -> float:
    """AIPool with its own (ideal) card choice."""
    return aipool_best(request, node, workload)[0]


def cards_aipool(request: Request, node: NodeView, workload: Workload) -> tuple[int, ...]:
    return aipool_best(request, node, workload)[1]


def score_aipool_slurm(request: Request, node: NodeView, workload: Workload) -> float:
    """AIPool live: the same measure, for the card slurmctld will actually pick."""
    return aipool_best(request, node, workload, card_rule=cards_slurm)[0]
