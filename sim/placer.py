"""Placing one request on the virtual cluster with a shared scorer from :mod:`gres.placement`.

This is :func:`gres.placement.decide` made fast enough for traces: the same ``fits``, the same
scorer calls and the same :func:`gres.placement.break_tie`, but scores are cached per node and
request and recomputed only for nodes that changed since (a task changes one node), and the
fit pre-filter runs on arrays.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
import numpy.typing as npt

from gres.placement import Request, Scorer, Workload, break_tie, cards_slurm, fits
from sim.cluster import Cluster, IntArray
from slurm_plugins.policy.policies.placement import fullness_weight


class CardChoice(StrEnum):
    """Who picks the card inside the chosen node."""

    #: The policy itself (FGD's own rule, the tightest card for the others): "ideal".
    POLICY = "policy"
    #: slurmctld 22.05, as modelled by :func:`gres.placement.cards_slurm`: the live system.
    SLURM = "slurm"


@dataclass
class _Scores:
    version: IntArray
    score: npt.NDArray[np.float64]


@dataclass
class Placer:
    """Chooses nodes and cards for requests on one cluster with one scorer."""

    cluster: Cluster
    scorer: Scorer
    workload: Workload
    rng: random.Random
    card_choice: CardChoice = CardChoice.POLICY
    scorer_calls: int = 0
    _cache: dict[Request, _Scores] = field(default_factory=dict)

    def choose(
        self, request: Request, allowed: npt.NDArray[np.bool_] | None = None
    ) -> tuple[int, tuple[int, ...]] | None:
        """Node index and cards for ``request`` (already on the cluster's grid), or None.

        ``allowed`` masks the nodes the job may use at all (its node lists).
        """
        cluster = self.cluster
        candidates = cluster.candidates(request)
        if allowed is not None:
            candidates = candidates[allowed[candidates]]
        if candidates.size == 0:
            return None
        cache = self._cache.get(request)
        if cache is None:
            n = len(cluster.names)
            cache = _Scores(np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=np.float64))
            self._cache[request] = cache
        stale = candidates[cache.version[candidates] != cluster.version[candidates]]
        score = self.scorer.score
        for i in stale.tolist():
            view = cluster.view(i)
            if not fits(request, view):  # the pre-filter must agree with the shared rule
                raise AssertionError(f"pre-filter let {request} onto {view}")
            cache.score[i] = score(request, view, self.workload)
            cache.version[i] = cluster.version[i]
        self.scorer_calls += len(stale)
        scores = cache.score[candidates]
        tied = candidates[scores == scores.max()]
        index = int(tied[break_tie(len(tied), self.scorer, self.rng)])
        view = cluster.view(index)
        if self.card_choice is CardChoice.SLURM:
            cards = cards_slurm(request, view)
        else:
            cards = self.scorer.cards(request, view, self.workload, self.rng)
        return index, cards


def by_weight(
    cluster: Cluster,
    request: Request,
    allowed: npt.NDArray[np.bool_] | None = None,
    levels: int = 10,
) -> tuple[int, tuple[int, ...]] | None:
    """slurmctld's node for a job the daemon has not pinned: the lowest ``Weight`` the
    daemon's ``placement`` policy gives (fuller GPU nodes first), then the lowest name; the
    cards slurmctld's. Weights are taken as the nodes are now (the daemon refreshes them
    every cycle)."""
    candidates = cluster.candidates(request)
    if allowed is not None:
        candidates = candidates[allowed[candidates]]
    if candidates.size == 0:
        return None
    units = cluster.grid.units
    counts = np.array([s.gpu_count for s in cluster.specs], dtype=np.int64)[candidates]
    free = np.clip(cluster.gpu_free[candidates], 0, units).sum(axis=1)
    used = 1.0 - free / np.maximum(counts * units, 1)
    weights = [
        fullness_weight(float(u), levels) if c else 1 for u, c in zip(used, counts, strict=True)
    ]
    best = int(candidates[min(range(len(weights)), key=lambda k: (weights[k], k))])
    return best, cards_slurm(request, cluster.view(best))
