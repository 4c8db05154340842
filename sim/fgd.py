"""The FGD paper's evaluation protocol (Weng et al., USENIX ATC'23), as its simulator runs it.

For one seed: sort the tasks by name and shuffle them; if their GPU demand is below
``ratio`` x cluster capacity, append tasks drawn with replacement from the trace until the
next draw would pass it (the reference compares the draw's *per-card* milli, so an 8-card
task can overshoot; kept), else drop random tasks until it is under. Then place the tasks
one at a time — no departures, no retries; a task that fits nowhere fails — and after each
record the arrived GPU demand and the allocated GPU milli. The allocation ratio "at x %
arrived" is the mean over the tasks whose arrived demand rounds to x % of capacity (x +- 1 if
none does; at ``ratio`` itself, where the run stops, the final state if still none: only
small task lists, whose tasks are large steps of demand, need that). Fragmentation is
measured against the trace's "typical" tasks (the most common shapes covering 95 % of
tasks), computed from the unshuffled trace.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gres.placement import MILLI, SCORERS, Request, Workload
from sim.cluster import RAW, Cluster, Grid
from sim.placer import CardChoice, Placer
from sim.trace import NodeSpec, Task

#: The checkpoints reported: allocation at every 1 % of arrived demand up to the ratio.
DEFAULT_RATIO = 1.3


@dataclass(frozen=True, slots=True)
class RunResult:
    """One policy on one seed."""

    policy: str
    seed: int
    grid: int
    cards: str
    tasks: int
    failed: int
    #: Allocation ratio (%) at 0, 1, ... % arrived; NaN where no task arrived near it. On the
    #: shard grid this counts whole shards, as Slurm accounts them.
    curve: tuple[float, ...]
    #: The same for what the placed tasks asked for (raw fractions, no rounding).
    requested: tuple[float, ...]
    seconds: float
    cpu_seconds: float
    scorer_calls: int

    def at(self, arrived_pct: int, *, requested: bool = False) -> float:
        curve = self.requested if requested else self.curve
        return curve[arrived_pct] if arrived_pct < len(curve) else float("nan")


def task_sequence(
    tasks: Sequence[Task], capacity_milli: int, seed: int, ratio: float = DEFAULT_RATIO
) -> list[Task]:
    """The seed's arrival order: the shuffled trace, topped up or thinned to ``ratio``."""
    rng = random.Random(seed)  # noqa: S311 - a reproducible simulation, not a secret
    order = sorted(tasks, key=lambda t: t.name)
    rng.shuffle(order)
    target = ratio * capacity_milli
    demand = sum(t.request.total_gpu_milli for t in order)
    if demand > target:
        while demand > target:
            gone = order.pop(rng.randrange(len(order)))
            demand -= gone.request.total_gpu_milli
        return order
    pool = sorted(tasks, key=lambda t: t.name)
    if not any(t.request.gpu_count for t in pool):
        raise ValueError("the task list asks for no GPUs; nothing to fill the cluster with")
    while True:
        drawn = pool[rng.randrange(len(pool))]
        if demand + drawn.request.gpu_milli > target:
            return order
        order.append(drawn)
        demand += drawn.request.total_gpu_milli


def ranked_nodes(nodes: Sequence[NodeSpec], seed: int) -> list[NodeSpec]:
    """The nodes renamed ``<rank>-<name>`` with a seeded random rank, as the FGD simulator does.

    Scorers give equal scores to the lowest name, so this makes the tie order random per seed
    but fixed within a run (a consistent order packs better than a fresh coin per task).
    """
    ordered = sorted(nodes, key=lambda n: n.name)
    ranks = list(range(len(ordered)))
    random.Random(f"nodes-{seed}").shuffle(ranks)  # noqa: S311
    width = len(str(max(len(ordered) - 1, 0)))
    return [
        NodeSpec(f"{rank:0{width}d}-{n.name}", n.cpu_milli, n.mem_mib, n.gpu_count, n.gpu_model)
        for rank, n in zip(ranks, ordered, strict=True)
    ]


def workload_of(tasks: Sequence[Task], grid: Grid = RAW) -> Workload:
    """The typical-task distribution, on the grid the cluster uses."""
    return Workload.from_requests(grid.snap(t.request) for t in tasks)


def run_one(
    nodes: Sequence[NodeSpec],
    tasks: Sequence[Task],
    policy: str,
    seed: int,
    *,
    grid: Grid = RAW,
    cards: CardChoice = CardChoice.POLICY,
    ratio: float = DEFAULT_RATIO,
) -> RunResult:
    """Run the protocol for one policy and seed."""
    started, cpu_started = time.perf_counter(), time.process_time()
    cluster = Cluster(ranked_nodes(nodes, seed), grid)
    capacity = cluster.gpu_count * MILLI
    sequence = task_sequence(tasks, capacity, seed, ratio)
    placer = Placer(cluster, SCORERS[policy], workload_of(tasks, grid), random.Random(seed), cards)  # noqa: S311
    arrived = np.zeros(len(sequence), dtype=np.float64)
    allocated = np.zeros(len(sequence), dtype=np.float64)
    requested = np.zeros(len(sequence), dtype=np.float64)
    demand = placed = 0
    failed = 0
    snapped: dict[Request, Request] = {}
    for k, task in enumerate(sequence):
        request = snapped.get(task.request)
        if request is None:
            request = snapped[task.request] = grid.snap(task.request)
        demand += task.request.total_gpu_milli
        choice = placer.choose(request)
        if choice is None:
            failed += 1
        else:
            cluster.allocate(choice[0], request, choice[1])
            placed += task.request.total_gpu_milli
        arrived[k] = demand
        allocated[k] = cluster.allocated_units * MILLI / grid.units
        requested[k] = placed
    last = round(ratio * 100)
    curve = checkpoints(arrived, allocated, capacity, last)
    return RunResult(
        policy,
        seed,
        grid.units,
        cards.value,
        len(sequence),
        failed,
        curve,
        checkpoints(arrived, requested, capacity, last),
        time.perf_counter() - started,
        time.process_time() - cpu_started,
        placer.scorer_calls,
    )


def checkpoints(
    arrived: npt.NDArray[np.float64],
    allocated: npt.NDArray[np.float64],
    capacity: float,
    last_pct: int,
) -> tuple[float, ...]:
    """Allocation ratio (%) at every whole percent of arrived demand, as the FGD scripts bin it."""
    arrived_pct = np.floor(arrived / capacity * 100 + 0.5)
    alloc_pct = allocated / capacity * 100
    curve: list[float] = []
    for pct in range(last_pct + 1):
        hit = arrived_pct == pct
        if not hit.any():
            hit = (arrived_pct >= pct - 1) & (arrived_pct <= pct + 1)
        if hit.any():
            curve.append(float(alloc_pct[hit].mean()))
        elif pct == last_pct and len(alloc_pct):  # the run stops here: its end state
            curve.append(float(alloc_pct[-1]))
        else:
            curve.append(float("nan"))
    return tuple(curve)
