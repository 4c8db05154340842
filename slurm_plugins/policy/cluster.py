"""A scratch copy of the cluster's free resources that one cycle reserves jobs into.

Policies that must know whether work *fits* (gang, anti-affinity, rescheduling, placement)
ask this view instead of guessing. It mirrors what slurmctld 22.05 does closely enough to
decide: CPUs, memory, whole cards, shards from the lowest card with room, typed NPUs.
It is mutable but private to one :func:`~slurm_plugins.policy.engine.plan` call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from slurm_plugins.policy.resources import Demand, features_match
from slurm_plugins.policy.snapshot import JobInfo, NodeInfo


@dataclass(slots=True)
class FreeNode:
    """What is left on one node; ``card_free`` in shards per card."""

    info: NodeInfo
    cpus: int
    mem_mb: int
    card_free: list[int]
    npus: dict[str, int]
    partitions: frozenset[str] = field(default_factory=frozenset)

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def full_cards(self) -> int:
        spg = self.info.shards_per_gpu
        return sum(1 for f in self.card_free if f >= spg)

    def fits(self, d: Demand) -> bool:
        if d.cpus > self.cpus or d.mem_mb > self.mem_mb:
            return False
        if d.gpus or d.shards:
            if d.gpu_type and d.gpu_type != self.info.gpu_type:
                return False
            if d.gpus and self.full_cards < d.gpus:
                return False
            if d.shards and not any(f >= d.shards for f in self.card_free):
                return False
        if d.npus:
            if d.npu_type:
                return self.npus.get(d.npu_type, 0) >= d.npus
            return sum(self.npus.values()) >= d.npus
        return True

    def take(self, d: Demand) -> tuple[int, ...]:
        """Reserve ``d`` the way slurmctld picks cards; returns the cards used."""
        spg = self.info.shards_per_gpu
        self.cpus -= d.cpus
        self.mem_mb -= d.mem_mb
        cards: list[int] = []
        if d.gpus:
            cards = [i for i, f in enumerate(self.card_free) if f >= spg][: d.gpus]
            for i in cards:
                self.card_free[i] = 0
        if d.shards:
            card = next(i for i, f in enumerate(self.card_free) if f >= d.shards)
            self.card_free[card] -= d.shards
            cards = [card]
        if d.npus:
            self._take_npus(d)
        return tuple(cards)

    def _take_npus(self, d: Demand) -> None:
        if d.npu_type:
            self.npus[d.npu_type] -= d.npus
            return
        left = d.npus
        for t in sorted(self.npus):
            n = min(left, self.npus[t])
            self.npus[t] -= n
            left -= n

    def give(self, d: Demand, cards: Iterable[tuple[int, int]]) -> None:
        """Return a running job's resources (``cards`` as (card, shards) pairs)."""
        spg = self.info.shards_per_gpu
        self.cpus += d.cpus
        self.mem_mb += d.mem_mb
        for card, shards in cards:
            if 0 <= card < len(self.card_free):
                self.card_free[card] = min(spg, self.card_free[card] + shards)
        if d.npus:
            key = d.npu_type or next(iter(sorted(self.npus)), "")
            self.npus[key] = self.npus.get(key, 0) + d.npus


Chooser = Callable[[JobInfo, Sequence[FreeNode]], FreeNode | None]


def first_fit(job: JobInfo, candidates: Sequence[FreeNode]) -> FreeNode | None:
    """Slurm's own choice: lowest ``Weight`` first, then node order."""
    best = None
    for n in candidates:
        if best is None or n.info.weight < best.info.weight:
            best = n
    return best


class ClusterView:
    """Free resources per node, with reservations made during one cycle."""

    def __init__(self, nodes: Iterable[NodeInfo], running: Iterable[JobInfo] = ()) -> None:
        self.nodes: dict[str, FreeNode] = {}
        for n in nodes:
            spg = n.shards_per_gpu
            self.nodes[n.name] = FreeNode(
                n,
                max(n.cpus - n.alloc_cpus, 0),
                max(n.mem_mb - n.alloc_mem_mb, 0),
                [max(spg - u, 0) for u in n.card_used] or [spg] * n.gpus,
                {t: c - n.npus_used.get(t, 0) for t, c in n.npus.items()},
                frozenset(n.partitions),
            )
        self._by_partition: dict[str, list[FreeNode]] = {}
        for fn in self.nodes.values():
            for p in fn.partitions:
                self._by_partition.setdefault(p, []).append(fn)
        #: job id -> nodes it was reserved on (pending jobs placed this cycle)
        self.placed: dict[int, tuple[str, ...]] = {}
        self._cards: dict[int, list[tuple[str, tuple[int, ...]]]] = {}
        self._running = {j.job_id: j for j in running}

    def candidates(
        self, job: JobInfo, *, exclude: Iterable[str] = (), require: Sequence[str] = ()
    ) -> list[FreeNode]:
        """Available nodes of the job's partitions that satisfy its constraints and fit now."""
        excluded = set(exclude) | set(job.excluded_nodes)
        required = set(require or job.required_nodes)
        out = []
        for part in job.partition.split(","):
            for n in self._by_partition.get(part, ()):
                if n.name in excluded or (required and n.name not in required):
                    continue
                if not n.info.available or not n.fits(job.demand):
                    continue
                if job.features and not features_match(job.features, n.info.features):
                    continue
                out.append(n)
        return out

    def find(
        self,
        job: JobInfo,
        *,
        exclude: Iterable[str] = (),
        require: Sequence[str] = (),
        choose: Chooser = first_fit,
    ) -> tuple[str, ...] | None:
        """Nodes the job would get now (without reserving), or None when it does not fit."""
        cands = self.candidates(job, exclude=exclude, require=require)
        if len(cands) < job.node_count:
            return None
        chosen: list[str] = []
        pool = list(cands)
        for _ in range(job.node_count):
            pick = choose(job, pool)
            if pick is None:
                return None
            chosen.append(pick.name)
            pool = [p for p in pool if p is not pick]
        return tuple(chosen)

    def reserve(self, job: JobInfo, nodes: Sequence[str]) -> None:
        used = []
        for name in nodes:
            used.append((name, self.nodes[name].take(job.demand)))
        self._cards[job.job_id] = used
        self.placed[job.job_id] = tuple(nodes)

    def place(
        self,
        job: JobInfo,
        *,
        exclude: Iterable[str] = (),
        require: Sequence[str] = (),
        choose: Chooser = first_fit,
    ) -> tuple[str, ...] | None:
        """Find and reserve; None (and nothing reserved) when the job does not fit."""
        nodes = self.find(job, exclude=exclude, require=require, choose=choose)
        if nodes is not None:
            self.reserve(job, nodes)
        return nodes

    def unreserve(self, job: JobInfo) -> None:
        for name, cards in self._cards.pop(job.job_id, []):
            spg = self.nodes[name].info.shards_per_gpu
            per = job.demand.shards or spg
            self.nodes[name].give(job.demand, [(c, per) for c in cards])
        self.placed.pop(job.job_id, None)

    def evict(self, job: JobInfo) -> None:
        """Give back what a running job holds, as if it had been requeued."""
        for name in job.nodes:
            node = self.nodes.get(name)
            if node is not None:
                node.give(job.demand, [(c.card, c.shards) for c in job.cards if c.node == name])

    def restore(self, job: JobInfo) -> None:
        """Undo :meth:`evict` (a trial eviction that turned out not to help)."""
        for name in job.nodes:
            node = self.nodes.get(name)
            if node is None:
                continue
            node.cpus -= job.demand.cpus
            node.mem_mb -= job.demand.mem_mb
            for c in job.cards:
                if c.node == name:
                    node.card_free[c.card] -= c.shards
            if job.demand.npus:
                key = job.demand.npu_type or next(iter(sorted(node.npus)), "")
                node.npus[key] = node.npus.get(key, 0) - job.demand.npus
