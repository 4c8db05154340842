"""A scratch copy of the cluster's free resources that one cycle reserves jobs into.

Policies that must know whether work *fits* (gang, anti-affinity, rescheduling, reclaim,
placement) ask this view instead of guessing. It mirrors what slurmctld 22.05 does closely
enough to decide: CPUs, memory, whole cards, shards from the lowest card with room, typed
NPUs, and nodes tried in ``Weight`` order. It is mutable but private to one
:func:`~slurm_plugins.policy.engine.plan` call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from slurm_plugins.policy.resources import Demand, features_match
from slurm_plugins.policy.snapshot import JobInfo, NodeInfo


class FreeNode:
    """What is left on one node; ``card_free`` in shards per card.

    slurmctld gives a whole-card request the lowest cards it believes free; Slurm 22.05
    believes a card free once any shard job on it has ended, even while others still hold
    shards there (``NodeInfo.slurm_busy``). ``slurm_free`` is that belief: a whole-card
    job fits only where the cards slurmctld would pick are really free, since elsewhere it
    would share a GPU with shard jobs.
    """

    __slots__ = (
        "card_free",
        "cpus",
        "info",
        "mem_mb",
        "name",
        "npus",
        "ok",
        "slurm_free",
        "spg",
        "version",
    )

    def __init__(self, n: NodeInfo) -> None:
        self.info = n
        self.name = n.name
        self.spg = n.shards_per_gpu
        self.ok = n.available
        self.cpus = max(n.cpus - n.alloc_cpus, 0)
        self.mem_mb = max(n.mem_mb - n.alloc_mem_mb, 0)
        used = n.card_used or (0,) * n.gpus
        self.card_free = [max(self.spg - u, 0) for u in used]
        busy = (
            set(n.slurm_busy) if n.slurm_busy is not None else {i for i, u in enumerate(used) if u}
        )
        self.slurm_free = [i not in busy for i in range(len(used))]
        self.npus = {t: c - n.npus_used.get(t, 0) for t, c in n.npus.items()}
        #: Bumped on every change, so derived views can be cached.
        self.version = 0

    def fits(self, d: Demand) -> bool:
        if d.cpus > self.cpus or d.mem_mb > self.mem_mb:
            return False
        if d.gpus or d.shards:
            if d.gpu_type and d.gpu_type != self.info.gpu_type:
                return False
            if d.gpus and not self.whole_ok(d.gpus):
                return False
            if d.shards and not self.shards_fit(d.shards):
                return False
        if d.npus:
            if d.npu_type:
                return self.npus.get(d.npu_type, 0) >= d.npus
            return sum(self.npus.values()) >= d.npus
        return True

    def shards_fit(self, shards: int) -> bool:
        """On one card; a request above one card (only admitted where Slurm takes one job's
        shards from several cards, 23.11+) over the node's cards together."""
        if shards > self.spg:
            return sum(self.card_free) >= shards
        return any(f >= shards for f in self.card_free)

    def whole_picks(self, n: int) -> list[int] | None:
        """The ``n`` cards slurmctld would give a whole-card request, or None."""
        picks = [i for i, free in enumerate(self.slurm_free) if free][:n]
        return picks if len(picks) == n else None

    def whole_ok(self, n: int) -> bool:
        """Would ``n`` whole cards go to really free cards here (and not to shared ones)?"""
        picks = self.whole_picks(n)
        return picks is not None and all(self.card_free[i] >= self.spg for i in picks)

    def unsafe_for(self, d: Demand) -> bool:
        """Would slurmctld start ``d`` here on a card that still holds shards?"""
        if not d.gpus or not self.shared_hazard or self.whole_ok(d.gpus):
            return False
        if d.cpus > self.cpus or d.mem_mb > self.mem_mb:
            return False
        if d.gpu_type and d.gpu_type != self.info.gpu_type:
            return False
        return self.whole_picks(d.gpus) is not None

    @property
    def shared_hazard(self) -> bool:
        """slurmctld believes a card free that still holds shards (Slurm 22.05)."""
        return any(f and c < self.spg for f, c in zip(self.slurm_free, self.card_free, strict=True))

    def take(self, d: Demand) -> list[tuple[int, int]]:
        """Reserve ``d`` the way slurmctld picks cards; returns (card, shards) taken."""
        self.version += 1
        self.cpus -= d.cpus
        self.mem_mb -= d.mem_mb
        taken: list[tuple[int, int]] = []
        if d.gpus:
            for i in self.whole_picks(d.gpus) or ():
                self.card_free[i] = 0
                self.slurm_free[i] = False
                taken.append((i, self.spg))
        if d.shards:
            for card, shards in self.shard_picks(d.shards):
                self.card_free[card] -= shards
                self.slurm_free[card] = False
                taken.append((card, shards))
        if d.npus:
            self._npus(d, -1)
        return taken

    def shard_picks(self, shards: int) -> list[tuple[int, int]]:
        """(card, shards) as slurmctld takes them: the lowest card with room for them all;
        failing that (above one card), what is free on each card in order."""
        card = next((i for i, f in enumerate(self.card_free) if f >= shards), None)
        if card is not None:
            return [(card, shards)]
        picks = []
        for i, free in enumerate(self.card_free):
            if shards and free:
                picks.append((i, min(free, shards)))
                shards -= picks[-1][1]
        return picks

    def give(self, d: Demand, cards: Iterable[tuple[int, int]], sign: int = 1) -> None:
        """Return (``sign=-1``: take back) resources held on ``cards``."""
        self.version += 1
        self.cpus += sign * d.cpus
        self.mem_mb += sign * d.mem_mb
        for card, shards in cards:
            if 0 <= card < len(self.card_free):
                self.card_free[card] = min(self.spg, self.card_free[card] + sign * shards)
                # slurmctld forgets the card's shards when any of its jobs ends (22.05)
                self.slurm_free[card] = sign > 0
        if d.npus:
            self._npus(d, sign)

    def _npus(self, d: Demand, sign: int) -> None:
        if d.npu_type or not self.npus:
            key = d.npu_type or ""
            self.npus[key] = self.npus.get(key, 0) + sign * d.npus
            return
        left = d.npus
        for t in sorted(self.npus):
            n = min(left, self.npus[t]) if sign < 0 else left
            self.npus[t] += sign * n
            left -= n
            if not left:
                break


Chooser = Callable[[JobInfo, Sequence[FreeNode]], FreeNode | None]


def first_fit(job: JobInfo, candidates: Sequence[FreeNode]) -> FreeNode | None:
    """Slurm's own choice: lowest ``Weight`` first, then node order."""
    return candidates[0] if candidates else None


class ClusterView:
    """Free resources per node, with reservations made during one cycle."""

    def __init__(self, nodes: Iterable[NodeInfo], running: Iterable[JobInfo] = ()) -> None:
        self.nodes: dict[str, FreeNode] = {n.name: FreeNode(n) for n in nodes}
        self.by_partition: dict[str, list[FreeNode]] = {}
        for fn in sorted(self.nodes.values(), key=lambda f: (f.info.weight, f.name)):
            for p in fn.info.partitions:
                self.by_partition.setdefault(p, []).append(fn)
        #: job id -> nodes it was reserved on (pending jobs placed this cycle)
        self.placed: dict[int, tuple[str, ...]] = {}
        self._taken: dict[int, list[tuple[str, list[tuple[int, int]]]]] = {}
        #: (partition, demand, features) known not to fit anywhere until something is freed
        self._nofit: set[tuple[str, Demand, str]] = set()
        #: Nodes whose free resources changed this cycle, in order (placement follows them).
        self.changed: list[str] = []

    def _eligible(self, job: JobInfo, n: FreeNode, excluded: set[str], required: set[str]) -> bool:
        if not n.ok or n.name in excluded or (required and n.name not in required):
            return False
        return not job.features or features_match(job.features, n.info.features)

    def feature_ok(self, job: JobInfo, name: str) -> bool:
        """Does node ``name`` have what the job's ``--constraint`` asks for?"""
        n = self.nodes.get(name)
        return n is not None and features_match(job.features, n.info.features)

    def candidates(
        self, job: JobInfo, *, exclude: Iterable[str] = (), require: Sequence[str] = ()
    ) -> list[FreeNode]:
        """Nodes of the job's partitions that satisfy its constraints and fit it now."""
        excluded = set(exclude) | set(job.excluded_nodes)
        required = set(require or job.required_nodes)
        out = []
        for part in job.partition.split(","):
            for n in self.by_partition.get(part, ()):
                if self._eligible(job, n, excluded, required) and n.fits(job.demand):
                    out.append(n)
        return out

    def hosts(self, job: JobInfo, *, exclude: Iterable[str] = ()) -> list[FreeNode]:
        """Nodes that could run the job were they empty enough: partition and constraints."""
        excluded = set(exclude) | set(job.excluded_nodes)
        required = set(job.required_nodes)
        return [
            n
            for part in job.partition.split(",")
            for n in self.by_partition.get(part, ())
            if self._eligible(job, n, excluded, required)
        ]

    def find(
        self,
        job: JobInfo,
        *,
        exclude: Iterable[str] = (),
        require: Sequence[str] = (),
        choose: Chooser = first_fit,
    ) -> tuple[str, ...] | None:
        """Nodes the job would get now (nothing reserved), or None when it does not fit."""
        exclude = tuple(exclude)
        plain = not exclude and not require and not job.excluded_nodes and not job.required_nodes
        key = (job.partition, job.demand, job.features)
        if plain and key in self._nofit:
            return None
        if choose is first_fit:
            found = self._first_fit(job, exclude, require)
        else:
            found = self._chosen(job, exclude, require, choose)
        if found is None and plain:
            self._nofit.add(key)
        return found

    def _first_fit(
        self, job: JobInfo, exclude: Sequence[str], require: Sequence[str]
    ) -> tuple[str, ...] | None:
        excluded = set(exclude) | set(job.excluded_nodes)
        required = set(require or job.required_nodes)
        chosen: list[str] = []
        for part in job.partition.split(","):
            for n in self.by_partition.get(part, ()):
                ok = n.name not in chosen and n.fits(job.demand)
                if ok and self._eligible(job, n, excluded, required):
                    chosen.append(n.name)
                    if len(chosen) == job.node_count:
                        return tuple(chosen)
        return None

    def _chosen(
        self, job: JobInfo, exclude: Sequence[str], require: Sequence[str], choose: Chooser
    ) -> tuple[str, ...] | None:
        pool = self.candidates(job, exclude=exclude, require=require)
        chosen: list[str] = []
        for _ in range(job.node_count):
            pick = choose(job, pool)
            if pick is None:
                return None
            chosen.append(pick.name)
            pool = [p for p in pool if p is not pick]
        return tuple(chosen)

    def held(self, job_id: int) -> list[tuple[str, int, int]]:
        """(node, card, shards) a job reserved this cycle, the cards as slurmctld picks."""
        return [(n, c, s) for n, picks in self._taken.get(job_id, []) for c, s in picks]

    def reserve(self, job: JobInfo, nodes: Sequence[str]) -> None:
        self._taken[job.job_id] = [(n, self.nodes[n].take(job.demand)) for n in nodes]
        self.placed[job.job_id] = tuple(nodes)
        self.changed.extend(nodes)

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
        for name, taken in self._taken.pop(job.job_id, []):
            self.nodes[name].give(job.demand, taken)
            self.changed.append(name)
        self.placed.pop(job.job_id, None)
        self._nofit.clear()

    def evict(self, job: JobInfo, sign: int = 1) -> None:
        """Give back what a running job holds, as if requeued (``sign=-1`` undoes it)."""
        for name in job.nodes:
            node = self.nodes.get(name)
            if node is not None:
                cards = [(c.card, c.shards) for c in job.cards if c.node == name]
                node.give(job.demand, cards, sign)
                self.changed.append(name)
        if sign > 0:
            self._nofit.clear()

    def restore(self, job: JobInfo) -> None:
        """Undo :meth:`evict` (a trial eviction that turned out not to help)."""
        self.evict(job, -1)
