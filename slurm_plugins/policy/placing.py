"""Where the live system puts a job: the scorer's best node among all that fit it now.

The ``placement`` policy decides the node of every job it pins, and the simulator's live
rules (``aipool sim … --rules live``) call the same functions, so the two cannot drift:

* :func:`request_of` — a job's per-node demand as a :class:`gres.placement.Request`: shards
  as thousandths of a card (what Slurm holds: k/32), whole GPUs, typed NPUs and vNPUs as
  whole devices of their type, CPU-only work as CPU and memory;
* :func:`family_of` — which cards a job is scored against: a node's GPUs (GPU work, and
  CPU work on GPU nodes, which can strand their cards), its NPUs of one type, or none;
* :func:`task_counts` — the daemon's task model: the shapes of every job in the queue and on
  the nodes, and of the work that ended within the usage window, per family;
* :class:`Placing` — one cycle's shape indexes (:mod:`gres.placement_index`) over the scratch
  :class:`~slurm_plugins.policy.cluster.ClusterView`, kept in step with the reservations the
  cycle makes; a choice is exactly :func:`gres.placement.decide` over every node that fits.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import attrgetter
from typing import Any

from gres.naming import DEFAULT_SHARDS_PER_GPU
from gres.placement import MILLI, Decision, NodeView, Request, Scorer, Shape, Workload
from gres.placement_index import ShapeIndex
from gres.placement_tasks import per_gpu_milli, task_model
from gres.placement_topology import Gang, SwitchNode, gang_same_switch, switches_used
from slurm_plugins.policy.cluster import ClusterView, FreeNode
from slurm_plugins.policy.resources import Amounts, Demand
from slurm_plugins.policy.snapshot import JobInfo, NodeInfo, UsageRecord

GPU = "gpu"
NPU = "npu"
CPU = "cpu"


def request_of(d: Demand, spg: int = DEFAULT_SHARDS_PER_GPU) -> Request:
    """The demand on one node as the scorers see it."""
    gpu_milli, count = 0, 0
    models: tuple[str, ...] = ()
    if d.shards:
        gpu_milli, count = min(MILLI, d.shards * MILLI // spg), 1
    elif d.gpus:
        gpu_milli, count = MILLI, d.gpus
    elif d.npus:
        gpu_milli, count = MILLI, d.npus
    if d.gpus or d.shards:
        models = (d.gpu_type,) if d.gpu_type else ()
    elif d.npus and d.npu_type:
        models = (d.npu_type,)
    return Request(d.cpus * 1000, d.mem_mb, gpu_milli, count, models)


def family_of(d: Demand, partition_kind: str) -> str:
    """``gpu``, ``npu:<type>``, ``npu`` (any type) or ``cpu``: the cards a job is scored on.
    CPU-only work is scored on the cards of the partition's nodes, which it can strand."""
    if d.gpus or d.shards:
        return GPU
    if d.npus:
        return f"{NPU}:{d.npu_type}" if d.npu_type else NPU
    return partition_kind


def kind_of(nodes: Iterable[NodeInfo]) -> str:
    """The family CPU work on these nodes is scored on: their GPUs, else NPUs, else none."""
    listed = list(nodes)
    if any(n.gpus for n in listed):
        return GPU
    if any(n.npus for n in listed):
        return NPU
    return CPU


def view_of(fn: FreeNode, family: str) -> NodeView:
    """A node as the scorer sees it for one family of cards (the others left out)."""
    info = fn.info
    if family == GPU:
        model = info.gpu_type or ""
        free = tuple(f * MILLI // fn.spg for f in fn.card_free)
    elif family.startswith(NPU):
        typ = family.partition(":")[2]
        types = [typ] if typ else sorted(info.npus)
        total = sum(info.npus.get(t, 0) for t in types)
        left = sum(max(fn.npus.get(t, 0), 0) for t in types)
        model = typ
        free = (MILLI,) * left + (0,) * (total - left)
    else:
        model, free = "", ()
    return NodeView(fn.name, model, fn.cpus * 1000, fn.mem_mb, free, info.cpus * 1000, info.mem_mb)


class TaskCounter:
    """The shapes of one family's jobs, counted, and the CPU and memory its card work brings
    per GPU milli (AIPool's stranding measure); jobs can be added and taken away."""

    def __init__(self) -> None:
        self.counts: Counter[Shape] = Counter()
        self._sums = [0.0, 0.0, 0.0]  # CPU milli, memory MiB, GPU milli of card work

    def add(self, r: Request, n: int = 1) -> None:
        """Count ``n`` jobs of request ``r`` (negative ``n``: jobs that left)."""
        self.counts[Shape(r.cpu_milli, r.gpu_milli, r.gpu_count, r.gpu_models)] += n
        if r.gpu_count:
            self._sums[0] += n * r.cpu_milli
            self._sums[1] += n * r.mem_mib
            self._sums[2] += n * r.total_gpu_milli

    def model(self) -> Workload:
        """The rounded task model (:func:`gres.placement_tasks.task_model`)."""
        cpu, mem = per_gpu_milli(*self._sums)
        return task_model(self.counts, cpu_per_gpu_milli=cpu, mem_per_gpu_milli=mem)


def task_counts(
    jobs: Iterable[JobInfo],
    usage: Iterable[UsageRecord],
    kinds: Mapping[str, str],
) -> dict[str, TaskCounter]:
    """Per family: the daemon's task model, counted: the jobs it sees (queued and running)
    and the work that ended within the usage window.

    ``kinds`` maps a partition to the family its CPU work is scored on (:func:`kind_of`)."""
    out: dict[str, TaskCounter] = {}
    # counted by what a job asks and where before anything per job is worked out: a queue of
    # 100k jobs holds a few hundred distinct requests
    for (demand, partition), n in Counter(map(_DEMAND_WHERE, jobs)).items():
        family = family_of(demand, kinds.get(partition.split(",", 1)[0], CPU))
        out.setdefault(family, TaskCounter()).add(request_of(demand), n)
    for amounts, n in Counter(map(_AMOUNTS, usage)).items():
        r = _request_of_usage(amounts)  # ended work in totals: one node's worth, GPUs only
        if r is not None:
            out.setdefault(GPU, TaskCounter()).add(r, n)
    return out


_DEMAND_WHERE = attrgetter("demand", "partition")
_AMOUNTS = attrgetter("amounts")


def _request_of_usage(amounts: Amounts) -> Request | None:
    gpu = amounts.gpu
    if gpu <= 0:
        return None
    cpu, mem = round(amounts.cpu * 1000), round(amounts.mem * 1024)
    if gpu < 1:
        return Request(cpu, mem, max(1, round(gpu * MILLI)), 1)
    return Request(cpu, mem, MILLI, round(gpu))


class ScoreStore:
    """Scores of node shapes, kept from cycle to cycle while the scorer and the task model
    stay the same (the model is kept until the mix moves): a cycle only scores shapes its
    nodes have not had before. Bounded: emptied past ``limit`` entries."""

    def __init__(self, limit: int = 2_000_000) -> None:
        self.limit = limit
        self._by_model: dict[tuple[str, int], dict[Request, dict[Any, float | None]]] = {}
        self._models: dict[tuple[str, int], Workload] = {}

    def for_model(self, scorer: Scorer, model: Workload) -> dict[Request, dict[Any, float | None]]:
        key = (scorer.name, id(model))
        if self._models.get(key) is not model:  # an id reused by another object
            self._by_model.pop(key, None)
        self._models[key] = model
        self._trim()
        return self._by_model.setdefault(key, {})

    def _trim(self) -> None:
        size = sum(len(d) for per in self._by_model.values() for d in per.values())
        if size > self.limit or len(self._by_model) > 16:
            self._by_model.clear()
            self._models.clear()


class Placing:
    """One cycle's placement: an index per (partition, family), built on first use."""

    def __init__(
        self,
        scorer: Scorer,
        view: ClusterView,
        models: Mapping[str, Workload],
        kinds: Mapping[str, str],
        scores: ScoreStore | None = None,
    ) -> None:
        self.scorer = scorer
        self.view = view
        self.models = models
        self.kinds = kinds
        self.scores = scores if scores is not None else ScoreStore()
        self._indexes: dict[tuple[str, str], ShapeIndex] = {}
        self._synced = 0
        self._hazards: set[str] | None = None
        self._hazard_seen = 0

    def workload(self, family: str) -> Workload:
        return self.models.get(family) or task_model({})

    def choose(
        self, job: JobInfo, *, exclude: frozenset[str] = frozenset()
    ) -> tuple[Decision, ...] | None:
        """The nodes (one per node the job needs) the scorer picks, or None if it does not
        fit now. Exclusions, constraints and a job's own node lists are honoured."""
        self._sync()
        best: tuple[Decision, ...] | None = None
        for part in job.partition.split(","):
            family = family_of(job.demand, self.kinds.get(part, CPU))
            index = self._index(part, family)
            spg = next((n.spg for n in self.view.by_partition.get(part, ())), 0)
            request = request_of(job.demand, spg or DEFAULT_SHARDS_PER_GPU)
            found = self._pick(index, request, job, exclude)
            if found and (best is None or _better(found, best)):
                best = found
        return best

    def _pick(
        self, index: ShapeIndex, request: Request, job: JobInfo, exclude: frozenset[str]
    ) -> tuple[Decision, ...] | None:
        excluded = exclude | set(job.excluded_nodes)
        required = set(job.required_nodes)
        whole = job.demand.gpus
        hazard = bool(whole) and bool(self.hazards())
        plain = not excluded and not required and not job.features and job.node_count <= 1
        if plain and not hazard:
            d = index.best(request)
            return (d,) if d is not None else None
        chosen: list[Decision] = []
        taken: set[str] = set()
        nodes = self.view.nodes

        def allowed(name: str) -> bool:
            if name in excluded or name in taken or (required and name not in required):
                return False
            if hazard and name in self.hazards() and not nodes[name].whole_ok(whole):
                return False
            return not job.features or self.view.feature_ok(job, name)

        if job.node_count > 1 and (gang := self._one_switch(index, request, job, allowed)):
            return gang
        for _ in range(max(job.node_count, 1)):
            d = index.best_among(request, allowed)
            if d is None:
                return None
            chosen.append(d)
            taken.add(d.node)
        return tuple(chosen)

    def _one_switch(
        self, index: ShapeIndex, request: Request, job: JobInfo, allowed: Callable[[str], bool]
    ) -> tuple[Decision, ...] | None:
        """A gang under one leaf switch when one has room: the switch
        :func:`gres.placement_topology.gang_same_switch` picks (the tightest), its nodes in the
        scorer's order. None without switches or when no switch has room: then the scorer's
        best nodes wherever they are. One pass over the nodes to find the switch, then one
        choice per member inside it."""
        nodes = self.view.nodes
        views = [
            SwitchNode(name, fn.info.switch, 1, 1)
            for name, fn in nodes.items()
            if fn.info.switch and name in index and allowed(name) and index.fits(request, name)
        ]
        chosen = gang_same_switch(Gang(job.node_count, 1), views)
        if chosen is None or switches_used(chosen, views) > 1:
            return None
        leaf = nodes[chosen[0]].info.switch
        picked: list[Decision] = []
        names: set[str] = set()

        def under(name: str) -> bool:
            return name not in names and nodes[name].info.switch == leaf and allowed(name)

        while len(picked) < job.node_count and (d := index.best_among(request, under)):
            picked.append(d)
            names.add(d.node)
        return tuple(picked) if len(picked) == job.node_count else None

    def hazards(self) -> set[str]:
        """Nodes where slurmctld believes a card free that still holds shards (followed
        through the cycle's reservations)."""
        changed = self.view.changed
        if self._hazards is None:
            self._hazards = {n for n, fn in self.view.nodes.items() if fn.ok and fn.shared_hazard}
            self._hazard_seen = len(changed)
        for name in set(changed[self._hazard_seen :]):
            fn = self.view.nodes.get(name)
            if fn is not None and fn.ok and fn.shared_hazard:
                self._hazards.add(name)
            else:
                self._hazards.discard(name)
        self._hazard_seen = len(changed)
        return self._hazards

    def unsafe(self, job: JobInfo) -> frozenset[str]:
        """Nodes slurmctld would start this whole-card job on, on a card still shared."""
        return frozenset(n for n in self.hazards() if self.view.nodes[n].unsafe_for(job.demand))

    def _index(self, part: str, family: str) -> ShapeIndex:
        key = (part, family)
        index = self._indexes.get(key)
        if index is None:
            workload = self.workload(family)
            index = ShapeIndex(self.scorer, workload, self.scores.for_model(self.scorer, workload))
            for fn in self.view.by_partition.get(part, ()):
                if fn.ok:
                    index.update(view_of(fn, family))
            self._indexes[key] = index
        return index

    def _sync(self) -> None:
        """Move the nodes the cycle reserved on (or freed) to their new shapes."""
        changed = self.view.changed
        if self._synced == len(changed):
            return
        names = set(changed[self._synced :])
        self._synced = len(changed)
        for (_, family), index in self._indexes.items():
            for name in names:
                fn = self.view.nodes.get(name)
                if fn is not None and name in index:
                    index.update(view_of(fn, family))


def _better(a: Sequence[Decision], b: Sequence[Decision]) -> bool:
    """Across partitions: the higher score of the first node, then the lower name."""
    return (a[0].score, b[0].node) > (b[0].score, a[0].node)
