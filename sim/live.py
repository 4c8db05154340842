"""The FGD protocol under the live path's rules: what the placement daemon and slurmctld do.

``aipool sim fgd --rules live`` places each task of a seed's sequence as the live system
does (``--rules ideal``, the default of the older figures, is the scorer with the whole
trace's task model, raw fractions and its own card: the upper bound). Per daemon cycle:

* each task is the job Slurm would hold: CPUs rounded up to whole cores, a share of a card
  rounded up to k/32 shards, GPU models as a constraint (:func:`job_of`);
* the admission hook deferred it, so the daemon sees it waiting beside every task running;
  its task model is theirs, counted and rounded as the daemon does
  (:class:`slurm_plugins.policy.placing.TaskCounter`);
* the node is the scorer's best of all nodes that fit, equal scores to the lowest name
  (:class:`gres.placement_index.ShapeIndex`, the daemon's own index); the cards are
  slurmctld's (the lowest index with room);
* a task that fits nowhere stays pending and is cancelled: it fails and leaves the model.

``batch`` > 1 lets one cycle see that many arrivals at once and place them in ``order``
(``arrival``, or ``largest`` GPU demand first): the daemon's batching of a busy queue.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gres.naming import DEFAULT_SHARDS_PER_GPU
from gres.placement import MILLI, SCORERS, NodeView, Request, Scorer, Workload
from gres.placement_index import ShapeIndex
from gres.placement_tasks import settled
from sim.cluster import SHARDS, Cluster, Grid
from sim.fgd import RunResult, checkpoints, ranked_nodes, task_sequence
from sim.trace import NodeSpec, Task
from slurm_plugins.policy.placing import TaskCounter, request_of
from slurm_plugins.policy.resources import Demand

ORDERS = ("arrival", "largest")


@dataclass(frozen=True, slots=True)
class LiveJob:
    """A task as Slurm holds it: what it is scored and placed with, and what it is counted
    as in the daemon's task model (a GPU model only when there is one: ``--gres`` type)."""

    request: Request
    counted: Request


def job_of(request: Request, spg: int = DEFAULT_SHARDS_PER_GPU) -> LiveJob:
    """The Slurm job a trace task becomes (``sim.consistency.sbatch_resources``' options)."""
    cpus = max(1, math.ceil(request.cpu_milli / 1000))
    shards = gpus = 0
    if request.is_fractional:
        shards = math.ceil(request.gpu_milli * spg / MILLI)
    else:
        gpus = request.gpu_count
    single = request.gpu_models[0] if len(request.gpu_models) == 1 else None
    demand = Demand(cpus, request.mem_mib, gpus, single, shards)
    counted = request_of(demand, spg)
    placed = Request(
        counted.cpu_milli,
        counted.mem_mib,
        counted.gpu_milli,
        counted.gpu_count,
        request.gpu_models if request.gpu_count else (),
    )
    return LiveJob(placed, counted)


def node_view(cluster: Cluster, i: int) -> NodeView:
    """Node ``i`` as the daemon sees a Slurm node (``placing.view_of``): whole free CPUs,
    free memory, free shards per card as thousandths, no kinds of work."""
    spec = cluster.specs[i]
    units = cluster.grid.units
    free = tuple(int(u) * MILLI // units for u in cluster.gpu_free[i, : spec.gpu_count])
    return NodeView(
        spec.name,
        spec.gpu_model,
        int(cluster.cpu_free[i]) // 1000 * 1000,
        int(cluster.mem_free[i]),
        free,
        spec.cpu_milli // 1000 * 1000,
        spec.mem_mib,
    )


class LivePlacer:
    """The daemon's placement over a virtual cluster: the task model and the shape index."""

    def __init__(self, cluster: Cluster, scorer: str | Scorer = "aipool") -> None:
        self.cluster = cluster
        self.scorer = SCORERS[scorer] if isinstance(scorer, str) else scorer
        self.counter = TaskCounter()
        self.index: ShapeIndex | None = None
        self.rebuilds = 0
        self._at = {name: i for i, name in enumerate(cluster.names)}

    def seen(self, job: LiveJob, n: int = 1) -> None:
        """The daemon sees ``n`` more (or, negative, fewer) jobs like ``job``."""
        self.counter.add(job.counted, n)

    def cycle_index(self) -> ShapeIndex:
        """The index for this cycle's task model: the daemon keeps its model until the mix
        moves (``settled``), and scores change only with it."""
        if self.index is None:
            self.index = ShapeIndex(self.scorer, self.counter.model())
            for i in range(len(self.cluster.names)):
                self.index.update(node_view(self.cluster, i))
            return self.index
        model: Workload = settled(self.index.workload, self.counter.model())
        if model is not self.index.workload:
            self.index.rescore(model)
            self.rebuilds += 1
        return self.index

    def place(self, job: LiveJob) -> tuple[int, tuple[int, ...]] | None:
        """Pin ``job`` and start it (the node's index, the cards), or None if nothing fits."""
        index = self.cycle_index()
        d = index.best(job.request)
        if d is None:
            return None
        i = self._at[d.node]
        self.cluster.allocate(i, job.request, d.cards)
        index.update(node_view(self.cluster, i))
        return i, d.cards


def run_live(
    nodes: Sequence[NodeSpec],
    tasks: Sequence[Task],
    seed: int,
    *,
    ratio: float = 1.3,
    scorer: str | Scorer = "aipool",
    batch: int = 1,
    order: str = "arrival",
    grid: Grid = SHARDS,
) -> RunResult:
    """The FGD protocol for one seed, every task through the live path's rules (``grid``:
    the shards a card is cut into, 32 by default, a site's ``shards_per_gpu``)."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    started, cpu_started = time.perf_counter(), time.process_time()
    cluster = Cluster(ranked_nodes(nodes, seed), grid)
    capacity = cluster.gpu_count * MILLI
    sequence = task_sequence(tasks, capacity, seed, ratio)
    placer = LivePlacer(cluster, scorer)
    jobs: dict[Request, LiveJob] = {}
    n = len(sequence)
    arrived, allocated, requested = (np.zeros(n, dtype=np.float64) for _ in range(3))
    demand = placed = 0
    failed = 0
    for start in range(0, n, batch):
        group = list(range(start, min(start + batch, n)))
        live = [
            jobs.setdefault(sequence[k].request, job_of(sequence[k].request, grid.units))
            for k in group
        ]
        for job in live:
            placer.seen(job)
        ordered = group if order == "arrival" else sorted(group, key=lambda k: _size(sequence[k]))
        for k in ordered:
            job = jobs[sequence[k].request]
            if placer.place(job) is None:
                failed += 1
                placer.seen(job, -1)  # cancelled: the daemon no longer sees it
            else:
                placed += sequence[k].request.total_gpu_milli
        for k in group:
            demand += sequence[k].request.total_gpu_milli
            arrived[k] = demand
            allocated[k] = cluster.allocated_units * MILLI / grid.units
            requested[k] = placed
    last = round(ratio * 100)
    return RunResult(
        placer.scorer.name,
        seed,
        grid.units,
        "slurm",
        n,
        failed,
        checkpoints(arrived, allocated, capacity, last),
        checkpoints(arrived, requested, capacity, last),
        time.perf_counter() - started,
        time.process_time() - cpu_started,
        placer.index.scorer_calls if placer.index else 0,
    )


def _size(task: Task) -> tuple[int, int]:
    """Largest GPU demand first, then most CPU: first-fit-decreasing within a batch."""
    return (-task.request.total_gpu_milli, -task.request.cpu_milli)
