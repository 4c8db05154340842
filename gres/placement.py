"""Fragmentation-aware placement: pure scorers over frozen node views, shared by the policy
daemon (which steers Slurm with them) and the trace simulator (which measures them).

The stable API:

* data — :class:`NodeView`, :class:`Request`, :class:`Workload` (with :class:`Shape`);
* :func:`fits` — can a node run a request now (model, CPU, memory, cards);
* :data:`SCORERS` — named :class:`Scorer` s: ``random-fit``, ``best-fit``, ``dot-product``,
  ``gpu-packing``, ``gpu-clustering``, ``fgd`` (the FGD paper's baselines, computed as its
  simulator does) and AIPool's ``aipool`` (live: scores the card slurmctld will pick) and
  ``aipool-ideal`` (scores and picks the card itself);
* :func:`decide` / :func:`choose_node` — the best fitting node, ties broken as the scorer says;
* card choice — :func:`cards_ideal`, :func:`cards_slurm`, and each scorer's own ``cards``.

Scores are "higher is better" and only compared between nodes that fit. Everything here is
deterministic: equal scores go to the lowest node name, and the only randomness (random-fit,
and its random card) comes from the ``rng`` passed in.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from gres.placement_baselines import (
    score_best_fit,
    score_dot_product,
    score_gpu_clustering,
    score_gpu_packing,
    score_random,
)
from gres.placement_cards import cards_ideal, cards_random, cards_slurm
from gres.placement_frag import (
    AipoolParams,
    aipool_frag,
    cards_aipool,
    cards_fgd,
    node_frag,
    score_aipool,
    score_aipool_slurm,
    score_fgd,
)
from gres.placement_model import MILLI, NodeView, Request, Shape, Workload, fits, place

__all__ = [
    "MILLI",
    "SCORERS",
    "AipoolParams",
    "Decision",
    "NodeView",
    "Request",
    "Scorer",
    "Shape",
    "Workload",
    "aipool_frag",
    "break_tie",
    "cards_ideal",
    "cards_slurm",
    "choose_node",
    "decide",
    "fits",
    "node_frag",
    "place",
]

ScoreFn = Callable[[Request, NodeView, Workload], float]
CardFn = Callable[[Request, NodeView, Workload, "random.Random | None"], tuple[int, ...]]


@dataclass(frozen=True)
class Scorer:
    """A named placement policy: how it ranks nodes and which cards it takes in one."""

    name: str
    description: str
    score: ScoreFn
    cards: CardFn
    #: Pick uniformly at random among equally scored nodes (random-fit). Otherwise equal scores
    #: go to the lowest node name, as in the FGD simulator's scheduler, which makes the choice
    #: reproducible; it gives nodes a seeded random name prefix to vary that order per run.
    random_ties: bool = False


@dataclass(frozen=True, slots=True)
class Decision:
    """Where a request goes and why, in words the portal can show."""

    node: str
    cards: tuple[int, ...]
    score: float
    reason: str


def break_tie(count: int, scorer: Scorer, rng: random.Random | None) -> int:
    """Which of ``count`` equally scored nodes (listed in name order) to take."""
    if count > 1 and scorer.random_ties and rng is not None:
        return rng.randrange(count)
    return 0


def decide(
    request: Request,
    nodes: Iterable[NodeView],
    scorer: Scorer,
    workload: Workload | None = None,
    rng: random.Random | None = None,
) -> Decision | None:
    """The node (and cards in it) ``scorer`` prefers for ``request``; None if none fits."""
    wl = workload if workload is not None else _EMPTY
    scored = sorted(
        ((n.name, scorer.score(request, n, wl), n) for n in nodes if fits(request, n)),
        key=lambda item: item[0],
    )
    if not scored:
        return None
    top = max(score for _, score, _ in scored)
    tied = [(name, node) for name, score, node in scored if score == top]
    name, node = tied[break_tie(len(tied), scorer, rng)]
    reason = f"{scorer.name}: score {top:g}, best of {len(scored)} fitting nodes"
    if len(tied) > 1:
        reason += f" ({len(tied)} tied)"
    return Decision(name, scorer.cards(request, node, wl, rng), top, reason)


def choose_node(
    request: Request,
    nodes: Iterable[NodeView],
    scorer: Scorer,
    workload: Workload | None = None,
    rng: random.Random | None = None,
) -> str | None:
    """Name of the node ``scorer`` prefers for ``request``, or None when nothing fits."""
    decision = decide(request, nodes, scorer, workload, rng)
    return decision.node if decision else None


#: Scorers that need no workload still take one; this stands in when none is given.
_EMPTY = Workload(())


def _ideal(
    request: Request, node: NodeView, workload: Workload, rng: random.Random | None
) -> tuple[int, ...]:
    return cards_ideal(request, node)


def _random(
    request: Request, node: NodeView, workload: Workload, rng: random.Random | None
) -> tuple[int, ...]:
    return cards_random(request, node, rng)


def _fgd(
    request: Request, node: NodeView, workload: Workload, rng: random.Random | None
) -> tuple[int, ...]:
    return cards_fgd(request, node, workload)


def _aipool(
    request: Request, node: NodeView, workload: Workload, rng: random.Random | None
) -> tuple[int, ...]:
    return cards_aipool(request, node, workload)


def _slurm(
    request: Request, node: NodeView, workload: Workload, rng: random.Random | None
) -> tuple[int, ...]:
    return cards_slurm(request, node)


_ALL = (
    Scorer("random-fit", "any fitting node, uniformly at random", score_random, _random, True),
    Scorer("best-fit", "least CPU + GPU left over", score_best_fit, _ideal),
    Scorer("dot-product", "Tetris dot product of free and requested", score_dot_product, _ideal),
    Scorer("gpu-packing", "shared cards, then used nodes, then idle", score_gpu_packing, _ideal),
    Scorer(
        "gpu-clustering", "nodes running the same kind of GPU work", score_gpu_clustering, _ideal
    ),
    Scorer("fgd", "fragmentation gradient descent (FGD)", score_fgd, _fgd),
    Scorer(
        "aipool",
        "FGD fragmentation + stranded GPUs, for the card slurmctld picks",
        score_aipool_slurm,
        _slurm,
    ),
    Scorer(
        "aipool-ideal",
        "FGD fragmentation + stranded GPUs, for its own best card",
        score_aipool,
        _aipool,
    ),
)

#: Every registered scorer by name.
SCORERS: Mapping[str, Scorer] = MappingProxyType({s.name: s for s in _ALL})
