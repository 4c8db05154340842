"""Many FGD-protocol runs (policies x seeds x variants), in parallel, and their summary."""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass

from sim.cluster import SHARDS, Grid
from sim.fgd import DEFAULT_RATIO, RunResult, run_one
from sim.placer import CardChoice
from sim.trace import NodeSpec, Task

#: The FGD paper's baselines, in its order, then AIPool.
BASELINES = ("random-fit", "dot-product", "gpu-clustering", "gpu-packing", "best-fit", "fgd")
DEFAULT_POLICIES = (*BASELINES, "aipool")
DEFAULT_SEEDS = tuple(range(42, 52))


@dataclass(frozen=True, slots=True)
class Variant:
    """How a run is measured: the share grid and who picks the card in a node, or the live
    path's rules (``sim.live``: k/32 shards, whole CPUs, the daemon's task model and index,
    slurmctld's cards), optionally with ``batch`` arrivals per daemon cycle."""

    grid: Grid
    cards: CardChoice
    rules: str = "ideal"
    batch: int = 1
    order: str = "arrival"

    @property
    def label(self) -> str:
        if self.rules == "live":
            extra = f", {self.batch} a cycle, {self.order} first" if self.batch > 1 else ""
            if self.grid.units != SHARDS.units:
                extra += f", k/{self.grid.units} shards"
            return f"live{extra}"
        grid = "raw" if self.grid.units == 1000 else f"k/{self.grid.units}"
        return f"{grid}, cards by {self.cards.value}"


#: The live path's rules (``--rules live``).
LIVE = Variant(SHARDS, CardChoice.SLURM, "live")


@dataclass(frozen=True, slots=True)
class Job:
    policy: str
    seed: int
    variant: Variant
    ratio: float = DEFAULT_RATIO


@dataclass(frozen=True, slots=True)
class Summary:
    """One policy under one variant, over all seeds: percentages of GPU capacity."""

    policy: str
    variant: Variant
    seeds: int
    alloc_100: float
    alloc_130: float
    sd_100: float
    sd_130: float
    #: What the placed tasks asked for (differs from the allocation on the shard grid).
    requested_100: float
    requested_130: float
    failed: float
    tasks: float
    #: CPU time of all its runs together.
    cpu_seconds: float
    curve: tuple[float, ...]


_NODES: Sequence[NodeSpec] = ()
_TASKS: Sequence[Task] = ()


def _init(nodes: Sequence[NodeSpec], tasks: Sequence[Task]) -> None:
    global _NODES, _TASKS  # a per-worker copy of the read-only inputs
    _NODES, _TASKS = nodes, tasks


def _run(job: Job) -> RunResult:
    v = job.variant
    if v.rules == "live":
        from sim.live import run_live

        return run_live(
            _NODES,
            _TASKS,
            job.seed,
            ratio=job.ratio,
            scorer=job.policy,
            batch=v.batch,
            order=v.order,
            grid=v.grid,
        )
    return run_one(
        _NODES, _TASKS, job.policy, job.seed, grid=v.grid, cards=v.cards, ratio=job.ratio
    )


def run_matrix(
    nodes: Sequence[NodeSpec],
    tasks: Sequence[Task],
    jobs: Sequence[Job],
    *,
    workers: int | None = None,
    progress: Callable[[RunResult], None] | None = None,
) -> list[tuple[Job, RunResult]]:
    """Run every job; in ``workers`` processes (default: the CPU count) when more than one."""
    count = workers or os.cpu_count() or 1
    done: list[tuple[Job, RunResult]] = []
    if count <= 1 or len(jobs) <= 1:
        _init(nodes, tasks)
        for job in jobs:
            result = _run(job)
            done.append((job, result))
            if progress:
                progress(result)
        return done
    with ProcessPoolExecutor(count, initializer=_init, initargs=(nodes, tasks)) as pool:
        futures = {pool.submit(_run, job): job for job in jobs}
        for future in as_completed(futures):
            result = future.result()
            done.append((futures[future], result))
            if progress:
                progress(result)
    order = {id(job): k for k, job in enumerate(jobs)}
    return sorted(done, key=lambda pair: order[id(pair[0])])


def summarise(results: Iterable[tuple[Job, RunResult]]) -> list[Summary]:
    """Means (and seed standard deviations) per policy and variant, in first-seen order."""
    groups: dict[tuple[str, Variant], list[RunResult]] = {}
    for job, result in results:
        groups.setdefault((job.policy, job.variant), []).append(result)
    out = []
    for (policy, variant), runs in groups.items():
        length = min(len(r.curve) for r in runs)
        curve = tuple(_mean(r.curve[k] for r in runs) for k in range(length))
        out.append(
            Summary(
                policy,
                variant,
                len(runs),
                _mean(r.at(100) for r in runs),
                _mean(r.at(130) for r in runs),
                _sd(r.at(100) for r in runs),
                _sd(r.at(130) for r in runs),
                _mean(r.at(100, requested=True) for r in runs),
                _mean(r.at(130, requested=True) for r in runs),
                _mean(r.failed for r in runs),
                _mean(r.tasks for r in runs),
                sum(r.cpu_seconds for r in runs),
                curve,
            )
        )
    return out


def parse_seeds(text: str) -> tuple[int, ...]:
    """``42-51``, ``42,44,46`` or a mix: ``42-45,50``."""
    seeds: list[int] = []
    for raw in text.split(","):
        part = raw.strip()
        if not part:
            continue
        low, sep, high = part.partition("-")
        try:
            first, last = int(low), int(high) if sep else int(low)
        except ValueError:
            raise ValueError(f"seeds must look like 42-51 or 42,43; got {text!r}") from None
        if last < first:
            raise ValueError(f"seed range {part!r} runs backwards")
        seeds.extend(range(first, last + 1))
    if not seeds:
        raise ValueError("no seeds given")
    return tuple(dict.fromkeys(seeds))


def _mean(values: Iterable[float]) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return statistics.fmean(kept) if kept else math.nan


def _sd(values: Iterable[float]) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return statistics.pstdev(kept) if len(kept) > 1 else 0.0
