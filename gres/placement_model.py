"""Frozen data the placement scorers work on: a node's free resources, a request, a workload.

Units follow the Alibaba GPU trace and the FGD paper: CPU in milli-CPUs, memory in MiB, GPU
in thousandths of one card ("milli"). A request asks for ``gpu_count`` cards of
``gpu_milli`` each:

* CPU only: ``gpu_count == 0`` and ``gpu_milli == 0``;
* a fraction of one card: ``gpu_count == 1`` and ``0 < gpu_milli < 1000``;
* whole cards: ``gpu_count >= 1`` and ``gpu_milli == 1000``.

Fractions of more than one card do not exist: Slurm 22.05 takes one job's shards from one
card (see :mod:`gres.shards`), and the trace has none either.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

#: One whole card in GPU milli.
MILLI = 1000
#: Kind tags of placed work, as the GPU-clustering baseline groups it.
KIND_CPU = "cpu"
KIND_SHARE = "share-gpu"


@dataclass(frozen=True, slots=True)
class Request:
    """What one task (one Slurm job, or one pod of the trace) asks of a single node."""

    cpu_milli: int
    mem_mib: int
    gpu_milli: int = 0
    gpu_count: int = 0
    #: Allowed GPU models (the trace's ``gpu_spec``); empty means any model.
    gpu_models: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.cpu_milli < 0 or self.mem_mib < 0 or self.gpu_count < 0:
            raise ValueError(f"negative request: {self}")
        if self.gpu_count == 0:
            if self.gpu_milli != 0:
                raise ValueError(f"gpu_milli without gpu_count: {self}")
        elif not 0 < self.gpu_milli <= MILLI:
            raise ValueError(f"gpu_milli must be in 1..{MILLI} per card: {self}")
        elif self.gpu_count > 1 and self.gpu_milli != MILLI:
            raise ValueError(f"a fraction of a card cannot span {self.gpu_count} cards: {self}")

    @property
    def is_fractional(self) -> bool:
        """True for a share of one card (a Slurm shard request)."""
        return self.gpu_count == 1 and self.gpu_milli < MILLI

    @property
    def total_gpu_milli(self) -> int:
        return self.gpu_milli * self.gpu_count

    @property
    def kind(self) -> str:
        """``cpu``, ``share-gpu`` or ``<n>-gpu``: the classes GPU clustering keeps together."""
        if self.gpu_count == 0:
            return KIND_CPU
        if self.is_fractional:
            return KIND_SHARE
        return f"{self.gpu_count}-gpu"

    def allows(self, gpu_model: str) -> bool:
        """May this request run on cards of ``gpu_model``? CPU-only requests run anywhere."""
        if self.gpu_count == 0 or not self.gpu_models:
            return True
        return gpu_model in self.gpu_models

    @classmethod
    def from_spec(
        cls, cpu_milli: int, mem_mib: int, gpu_milli: int, gpu_count: int, gpu_spec: str = ""
    ) -> Request:
        """Build from the trace's columns; ``gpu_spec`` is ``|``-separated models or empty."""
        models = tuple(sorted({m for m in gpu_spec.split("|") if m}))
        return cls(cpu_milli, mem_mib, gpu_milli if gpu_count else 0, gpu_count, models)


@dataclass(frozen=True, slots=True)
class NodeView:
    """One node as a scorer sees it: what is free now and what it has in total."""

    name: str
    gpu_model: str
    cpu_milli_free: int
    mem_mib_free: int
    #: Free milli per card, in device index order (``gpu0`` first); empty for a CPU node.
    gpu_free_milli: tuple[int, ...]
    cpu_milli_total: int
    mem_mib_total: int
    #: Kinds (:attr:`Request.kind`) of the GPU work placed on the node; GPU clustering uses it.
    gpu_kinds: frozenset[str] = field(default_factory=frozenset)

    @property
    def gpu_count(self) -> int:
        return len(self.gpu_free_milli)

    @property
    def gpu_free_total(self) -> int:
        return sum(self.gpu_free_milli)

    @property
    def full_cards(self) -> int:
        """Cards with nothing allocated on them."""
        return sum(1 for free in self.gpu_free_milli if free >= MILLI)


def fits(request: Request, node: NodeView) -> bool:
    """Can ``node`` run ``request`` now: model, CPU, memory and the cards themselves?"""
    if not request.allows(node.gpu_model):
        return False
    if request.cpu_milli > node.cpu_milli_free or request.mem_mib > node.mem_mib_free:
        return False
    if request.gpu_count == 0:
        return True
    if request.is_fractional:
        return any(free >= request.gpu_milli for free in node.gpu_free_milli)
    return node.full_cards >= request.gpu_count


def place(request: Request, node: NodeView, cards: tuple[int, ...]) -> NodeView:
    """The node after ``request`` is placed on ``cards`` (no check beyond the arithmetic)."""
    free = list(node.gpu_free_milli)
    for card in cards:
        free[card] -= request.gpu_milli
        if free[card] < 0:
            raise ValueError(f"card {card} of {node.name} cannot hold {request}")
    kinds = node.gpu_kinds | {request.kind} if request.gpu_count else node.gpu_kinds
    return NodeView(
        node.name,
        node.gpu_model,
        node.cpu_milli_free - request.cpu_milli,
        node.mem_mib_free - request.mem_mib,
        tuple(free),
        node.cpu_milli_total,
        node.mem_mib_total,
        kinds,
    )


@dataclass(frozen=True, slots=True)
class Shape:
    """A task class of the target workload: the part of a request fragmentation looks at."""

    cpu_milli: int
    gpu_milli: int
    gpu_count: int
    gpu_models: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class Workload:
    """The task-type distribution FGD measures fragmentation against ("typical pods").

    Built once per run and compared by identity, so scorers can memoise on it cheaply.
    """

    shapes: tuple[tuple[Shape, float], ...]
    #: Mean CPU milli and memory MiB that GPU work brings per GPU milli (0 = unknown): how much
    #: CPU and memory a node must keep to put its free GPUs to use (AIPool's measure).
    cpu_per_gpu_milli: float = 0.0
    mem_per_gpu_milli: float = 0.0

    @classmethod
    def from_requests(cls, requests: Iterable[Request], coverage: float = 0.95) -> Workload:
        """The most frequent shapes that together make up ``coverage`` of the tasks.

        As the FGD simulator does it: count tasks per shape (memory is not part of it),
        take shapes in decreasing count (ties: larger CPU, then GPU milli, count and models
        first) until their share reaches ``coverage``, then renormalise to sum to 1.
        """
        listed = list(requests)
        counts = Counter(Shape(r.cpu_milli, r.gpu_milli, r.gpu_count, r.gpu_models) for r in listed)
        if not counts:
            raise ValueError("a workload needs at least one request")
        total = sum(counts.values())
        ranked = sorted(counts.items(), key=_rank_key, reverse=True)
        chosen: list[tuple[Shape, int]] = []
        covered = 0
        for shape, count in ranked:
            if covered >= coverage * total:
                break
            chosen.append((shape, count))
            covered += count
        gpu = sum(r.total_gpu_milli for r in listed)
        cpu = sum(r.cpu_milli for r in listed if r.gpu_count)
        mem = sum(r.mem_mib for r in listed if r.gpu_count)
        shapes = tuple((shape, count / covered) for shape, count in chosen)
        return cls(shapes, cpu / gpu if gpu else 0.0, mem / gpu if gpu else 0.0)

    @classmethod
    def from_weights(cls, weights: Mapping[Shape, float]) -> Workload:
        """An explicit distribution (weights are normalised to sum to 1)."""
        total = sum(weights.values())
        if total <= 0:
            raise ValueError("workload weights must sum to a positive number")
        shapes = tuple((shape, w / total) for shape, w in weights.items() if w > 0)
        gpu = sum(w * s.gpu_milli * s.gpu_count for s, w in shapes)
        cpu = sum(w * s.cpu_milli for s, w in shapes if s.gpu_count)
        return cls(shapes, cpu / gpu if gpu else 0.0)


def _rank_key(item: tuple[Shape, int]) -> tuple[int, int, int, int, tuple[str, ...]]:
    shape, count = item
    return (count, shape.cpu_milli, shape.gpu_milli, shape.gpu_count, shape.gpu_models)
