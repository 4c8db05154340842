"""A virtual cluster: free CPU, memory and per-card GPU of every node, as numpy arrays.

GPU capacity is kept in *units* of a card: 1000 (milli, the trace's raw fractions) or 32
(Slurm shards, fractions rounded up to k/32). Scorers always see milli: a node's free units
``u`` become ``u * 1000 // U`` and a request of ``k`` units ``k * 1000 // U``. Flooring both
keeps "fits" exact: ``u >= k`` exactly when ``floor(u·1000/U) >= floor(k·1000/U)``, because
one unit is at least one milli.

The arrays give a fast, exact pre-filter for :func:`gres.placement.fits`; scoring itself
always calls the shared scorers on :class:`gres.placement.NodeView` s, cached per node until
the node changes (:attr:`Cluster.version`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gres.naming import DEFAULT_SHARDS_PER_GPU
from gres.placement import MILLI, NodeView, Request
from sim.trace import NodeSpec

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Grid:
    """How finely a card is divided: 1000 milli (raw) or 32 shards (Slurm)."""

    units: int = MILLI

    def to_units(self, milli: int) -> int:
        """Units a share of ``milli`` needs: rounded *up* to the grid."""
        return math.ceil(milli * self.units / MILLI)

    def to_milli(self, units: int) -> int:
        return units * MILLI // self.units

    def snap(self, request: Request) -> Request:
        """The request as the scorers see it on this grid."""
        if self.units == MILLI or request.gpu_count == 0:
            return request
        milli = self.to_milli(self.to_units(request.gpu_milli))
        return Request(
            request.cpu_milli, request.mem_mib, milli, request.gpu_count, request.gpu_models
        )


RAW = Grid(MILLI)
SHARDS = Grid(DEFAULT_SHARDS_PER_GPU)


class Cluster:
    """Mutable state of the virtual nodes; index ``i`` is the i-th node by name."""

    def __init__(self, nodes: Sequence[NodeSpec], grid: Grid = RAW) -> None:
        self.specs = sorted(nodes, key=lambda n: n.name)
        self.grid = grid
        n = len(self.specs)
        cards = max((s.gpu_count for s in self.specs), default=0)
        self.names = [s.name for s in self.specs]
        self.cpu_free: IntArray = np.array([s.cpu_milli for s in self.specs], dtype=np.int64)
        self.mem_free: IntArray = np.array([s.mem_mib for s in self.specs], dtype=np.int64)
        self.gpu_free: IntArray = np.full((n, max(cards, 1)), -1, dtype=np.int64)
        for i, s in enumerate(self.specs):
            self.gpu_free[i, : s.gpu_count] = grid.units
        self.max_free: IntArray = self.gpu_free.max(axis=1)
        self.full: IntArray = (self.gpu_free == grid.units).sum(axis=1)
        self.models = sorted({s.gpu_model for s in self.specs})
        self.model_of: IntArray = np.array([self.models.index(s.gpu_model) for s in self.specs])
        self.version: IntArray = np.zeros(n, dtype=np.int64)
        self.kinds: list[Counter[str]] = [Counter() for _ in self.specs]
        self.capacity_units = int(sum(s.gpu_count for s in self.specs)) * grid.units
        self.allocated_units = 0
        self._views: list[NodeView | None] = [None] * n
        self._model_masks: dict[tuple[str, ...], npt.NDArray[np.bool_]] = {}

    @property
    def gpu_count(self) -> int:
        return self.capacity_units // self.grid.units

    def view(self, i: int) -> NodeView:
        """Node ``i`` as the scorers see it (cached until it changes)."""
        view = self._views[i]
        if view is None:
            spec = self.specs[i]
            free = tuple(self.grid.to_milli(int(u)) for u in self.gpu_free[i, : spec.gpu_count])
            view = NodeView(
                spec.name,
                spec.gpu_model,
                int(self.cpu_free[i]),
                int(self.mem_free[i]),
                free,
                spec.cpu_milli,
                spec.mem_mib,
                frozenset(k for k, c in self.kinds[i].items() if c > 0),
            )
            self._views[i] = view
        return view

    def candidates(self, request: Request) -> IntArray:
        """Indices of the nodes that fit ``request`` (same answer as ``fits``), in name order."""
        mask = (self.cpu_free >= request.cpu_milli) & (self.mem_free >= request.mem_mib)
        if request.gpu_count:
            mask &= self._model_mask(request.gpu_models)
            if request.is_fractional:
                mask &= self.max_free >= self.grid.to_units(request.gpu_milli)
            else:
                mask &= self.full >= request.gpu_count
        return np.flatnonzero(mask)

    def allocate(self, i: int, request: Request, cards: tuple[int, ...]) -> None:
        self._change(i, request, cards, -1)

    def release(self, i: int, request: Request, cards: tuple[int, ...]) -> None:
        self._change(i, request, cards, +1)

    def _change(self, i: int, request: Request, cards: tuple[int, ...], sign: int) -> None:
        units = self.grid.to_units(request.gpu_milli) if request.gpu_count else 0
        if len(cards) != request.gpu_count:
            raise ValueError(f"{request} needs {request.gpu_count} cards, got {cards}")
        cpu = int(self.cpu_free[i]) + sign * request.cpu_milli
        mem = int(self.mem_free[i]) + sign * request.mem_mib
        row = self.gpu_free[i].copy()
        for card in cards:
            row[card] += sign * units
        if cpu < 0 or mem < 0 or cpu > self.specs[i].cpu_milli or (row > self.grid.units).any():
            raise ValueError(f"node {self.names[i]} over- or under-allocated by {request}")
        if cards and row[list(cards)].min() < 0:
            raise ValueError(f"cards {cards} of {self.names[i]} cannot hold {request}")
        self.cpu_free[i], self.mem_free[i], self.gpu_free[i] = cpu, mem, row
        self.max_free[i] = row.max()
        self.full[i] = int((row == self.grid.units).sum())
        if request.gpu_count:
            self.kinds[i][request.kind] -= sign
        self.allocated_units -= sign * units * len(cards)
        self.version[i] += 1
        self._views[i] = None

    def _model_mask(self, models: tuple[str, ...]) -> npt.NDArray[np.bool_]:
        mask = self._model_masks.get(models)
        if mask is None:
            allowed = [k for k, m in enumerate(self.models) if m and (not models or m in models)]
            mask = np.isin(self.model_of, allowed)
            self._model_masks[models] = mask
        return mask
