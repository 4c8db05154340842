"""Which cards inside a chosen node a request gets.

AIPool chooses the node; on the live system slurmctld then chooses the card. Two models:

* :func:`cards_slurm` — what slurmctld 22.05 does, as observed on the lab cluster and assumed
  here until the lab check confirms it: a shard request goes to the **lowest-index card that
  still has enough free shards** (cards allocated whole have none); whole cards go to the
  lowest-index cards that are completely free. It never looks at fragmentation.
* :func:`cards_ideal` — the tightest fit: the card whose free share is smallest but enough
  (lowest index on ties), so partly used cards fill up before a fresh one is broken into.
  Whole cards as above. This is the FGD simulator's "best" card selection.
"""

from __future__ import annotations

import random

from gres.placement_model import MILLI, NodeView, Request


def cards_slurm(request: Request, node: NodeView) -> tuple[int, ...]:
    """Cards slurmctld 22.05 would give ``request`` on ``node``; ``()`` if none can."""
    if request.gpu_count == 0:
        return ()
    if request.is_fractional:
        for index, free in enumerate(node.gpu_free_milli):
            if free >= request.gpu_milli:
                return (index,)
        return ()
    return whole_cards(request, node)


def cards_ideal(request: Request, node: NodeView) -> tuple[int, ...]:
    """The tightest-fitting card for a share, the lowest free cards for whole requests."""
    if request.gpu_count == 0:
        return ()
    if request.is_fractional:
        best = -1
        for index, free in enumerate(node.gpu_free_milli):
            if free >= request.gpu_milli and (best < 0 or free < node.gpu_free_milli[best]):
                best = index
        return (best,) if best >= 0 else ()
    return whole_cards(request, node)


def cards_random(request: Request, node: NodeView, rng: random.Random | None) -> tuple[int, ...]:
    """A uniformly random fitting card for a share (the random-fit baseline); whole as above."""
    if not request.is_fractional or rng is None:
        return cards_ideal(request, node)
    fitting = [i for i, free in enumerate(node.gpu_free_milli) if free >= request.gpu_milli]
    return (fitting[rng.randrange(len(fitting))],) if fitting else ()


def whole_cards(request: Request, node: NodeView) -> tuple[int, ...]:
    """The ``gpu_count`` lowest-index completely free cards, or ``()``."""
    chosen = tuple(i for i, free in enumerate(node.gpu_free_milli) if free >= MILLI)
    return chosen[: request.gpu_count] if len(chosen) >= request.gpu_count else ()
