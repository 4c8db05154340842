"""Time-based simulation of Slurm with the AIPool policy daemon, in virtual time.

Jobs arrive, wait, run for their runtime and leave. Two actors, as on the live system:

* **the daemon** — every ``cycle_s`` seconds while work is pending it builds a
  :class:`~slurm_plugins.policy.snapshot.Snapshot` of the virtual cluster and runs the real
  :func:`slurm_plugins.policy.engine.plan` with the configured queue policies; the plan's
  SiteFactors, holds, releases, node lists and requeues/cancels are applied
  (:mod:`sim.daemon`);
* **slurmctld** — after every event it walks the pending, unheld, eligible jobs by priority
  (SiteFactor, then submit time, then id) and starts each that fits now, skipping those that
  do not (backfill without time limits). The node is the one the placement scorer picks
  (the daemon pins fractional jobs and weights nodes, so Slurm lands where it says); the
  card is slurmctld's (:func:`gres.placement.cards_slurm`). A requeued job may start again
after ``requeue_delay_s`` (12 s, as measured on the lab cluster with a tuned delay).

With ``hold_new`` jobs are submitted held and only the daemon releases them, as
quota-managed work is on the live system (held, with the ``admit`` label); without it Slurm
may start a job before the daemon's next cycle has judged it.

With ``defer_s`` (the live path's rules) every job arrives deferred as the admission hook
defers it while the placement daemon's heartbeat is fresh: it may not start before
``submit + defer_s`` unless the daemon starts it, and the daemon, woken by each submission,
cycles at every arrival. Work the daemon did not pin (it fitted nowhere when it arrived)
is placed by slurmctld when room frees: by node ``Weight`` (``unpinned="weight"``).
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from gres.placement import SCORERS, Request, Workload, cards_slurm, fits
from sim.cluster import SHARDS, Cluster, Grid
from sim.placer import CardChoice, Placer, by_weight
from sim.trace import NodeSpec

#: How slurmctld picks the node of a job the daemon has not pinned: the placement scorer's
#: node (steering as good as a pin), or the node ``Weight`` order the daemon sets (what the
#: lab shows Slurm does: fuller GPU nodes first, then the lowest name).
UNPINNED = ("scorer", "weight")


@dataclass(eq=False)
class SimJob:
    """One job's request and life in the simulation."""

    job_id: int
    name: str
    user: str
    account: str
    qos: str
    request: Request
    submit: float
    runtime: float
    #: Reporting class (a QoS, or the Kueue scenario's small / medium / large).
    klass: str = ""
    #: The QOS the daemon moved it to (capacity's borrowing QOS), if any; ``qos`` stays the
    #: job's own. Slurm's QOS preemption is not modelled: reclaim is the daemon's requeue.
    qos_now: str = ""
    state: str = "PENDING"
    held: bool = False
    site_factor: int = 0
    start: float | None = None
    first_start: float | None = None
    end: float | None = None
    node: int = -1
    cards: tuple[int, ...] = ()
    required: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()
    restarts: int = 0
    #: Not before this time (a requeued job waits out slurmctld's requeue delay).
    eligible: float = 0.0
    #: Deferred by the admission hook until this time unless the daemon starts it first.
    deferred_until: float | None = None
    gpu: float = 0.0
    #: (start, end) of every stretch it ran; more than one after a requeue.
    runs: list[tuple[float, float]] = field(default_factory=list)


@dataclass
class Sample:
    """The cluster at one moment: GPUs allocated, and GPUs running plus waiting work asks for."""

    time: float
    allocated: float
    demand: float


@dataclass
class QueueRun:
    """Everything a run produced; the metric functions in :mod:`sim.metrics` read it."""

    jobs: list[SimJob]
    samples: list[Sample]
    capacity_gpu: float
    cycles: int
    end: float
    unstarted: int = 0
    notes: list[str] = field(default_factory=list)


Hook = Callable[["QueueSim", float], None]


class QueueSim:
    """The event loop; :mod:`sim.daemon` provides the daemon side as ``daemon``."""

    def __init__(
        self,
        nodes: Sequence[NodeSpec],
        jobs: Sequence[SimJob],
        daemon: Hook | None,
        *,
        scorer: str = "aipool",
        cycle_s: float = 10.0,
        requeue_delay_s: float = 12.0,
        grid: Grid = SHARDS,
        workload: Workload | None = None,
        seed: int = 0,
        unpinned: str = "scorer",
        defer_s: float | None = None,
    ) -> None:
        if unpinned not in UNPINNED:
            raise ValueError(f"unpinned must be one of {', '.join(UNPINNED)}, got {unpinned!r}")
        self.unpinned = unpinned
        self.cluster = Cluster(nodes, grid)
        self.grid = grid
        self.jobs = sorted(jobs, key=lambda j: (j.submit, j.job_id))
        for job in self.jobs:
            job.gpu = grid.to_units(job.request.gpu_milli) * job.request.gpu_count / grid.units
        self.by_id = {j.job_id: j for j in self.jobs}
        wl = workload or Workload.from_requests(j.request for j in self.jobs)
        rng = random.Random(seed)  # noqa: S311 - a reproducible simulation
        self.placer = Placer(self.cluster, SCORERS[scorer], wl, rng, CardChoice.SLURM)
        self.daemon = daemon
        self.cycle_s = cycle_s
        self.defer_s = defer_s
        self.requeue_delay_s = requeue_delay_s
        self.pending: dict[int, SimJob] = {}
        self.running: dict[int, SimJob] = {}
        self.finished: list[SimJob] = []
        self.samples: list[Sample] = []
        self.cycles = 0
        self._finish: list[tuple[float, int, int]] = []  # (time, job id, restart count)
        self._wakes: list[float] = []  # when requeued jobs become eligible again
        self._index = {name: i for i, name in enumerate(self.cluster.names)}

    # -------------------------------------------------------------- the loop
    def run(self, progress: Callable[[int, int], None] | None = None) -> QueueRun:
        arrivals = 0
        now = self.jobs[0].submit if self.jobs else 0.0
        next_cycle = now
        stalled = False
        while arrivals < len(self.jobs) or self.running or (self.pending and not stalled):
            upcoming = [self.jobs[arrivals].submit] if arrivals < len(self.jobs) else []
            if self._finish:
                upcoming.append(self._finish[0][0])
            if self._wakes:
                upcoming.append(self._wakes[0])
            if self.pending and self.daemon is not None and not stalled:
                upcoming.append(next_cycle)
            if not upcoming:
                break
            now = max(now, min(upcoming))
            changed = self._finish_due(now)
            while self._wakes and self._wakes[0] <= now:
                heapq.heappop(self._wakes)
                changed = True
            arrived = False
            while arrivals < len(self.jobs) and self.jobs[arrivals].submit <= now:
                self._arrive(self.jobs[arrivals])
                arrivals += 1
                changed = arrived = True
            woken = arrived and self.defer_s is not None  # the daemon watches submissions
            if self.daemon is not None and (now >= next_cycle or woken):
                before = self._signature()
                self.daemon(self, now)
                self.cycles += 1
                next_cycle = now + self.cycle_s
                changed = changed or self._signature() != before
            started = self.schedule(now) if changed else 0
            # Nothing can move until an arrival or a finish: stop cycling on a stuck queue.
            stalled = not (changed or started) and not self.running and arrivals >= len(self.jobs)
            self._sample(now)
            if progress:
                progress(len(self.finished), len(self.jobs))
        return QueueRun(
            list(self.jobs),
            self.samples,
            self.cluster.gpu_count,
            self.cycles,
            now,
            unstarted=sum(1 for j in self.jobs if j.first_start is None),
        )

    def _arrive(self, job: SimJob) -> None:
        self.pending[job.job_id] = job
        if self.defer_s is not None:
            job.deferred_until = job.submit + self.defer_s
            heapq.heappush(self._wakes, job.deferred_until)

    def _finish_due(self, now: float) -> bool:
        done = False
        while self._finish and self._finish[0][0] <= now:
            _, job_id, restarts = heapq.heappop(self._finish)
            job = self.running.get(job_id)
            if job is None or job.restarts != restarts:
                continue  # requeued or cancelled since
            self.stop(job, now)
            job.state = "COMPLETED"
            self.finished.append(job)
            done = True
        return done

    # -------------------------------------------------------------- slurmctld
    def schedule(self, now: float) -> int:
        """Start every pending, unheld job that fits, highest priority first."""
        order = sorted(
            (
                j
                for j in self.pending.values()
                if not j.held
                and j.eligible <= now
                and (j.deferred_until is None or j.deferred_until <= now)
            ),
            key=lambda j: (-j.site_factor, j.submit, j.job_id),
        )
        started = 0
        refused: set[tuple[Request, tuple[str, ...], tuple[str, ...]]] = set()
        room = self._room()
        for job in order:
            key = (job.request, job.required, job.excluded)
            if key in refused or not _may_fit(job.request, room, self.grid):  # room only shrinks
                continue
            choice = self._choose(job)
            if choice is None:
                refused.add(key)
                continue
            self.start(job, now, *choice)
            room = self._room()
            started += 1
        return started

    def _room(self) -> tuple[int, int, int, int]:
        """The most CPU, memory, free units on one card and whole cards any node has."""
        c = self.cluster
        return (
            int(c.cpu_free.max()),
            int(c.mem_free.max()),
            int(c.max_free.max()),
            int(c.full.max()),
        )

    def _choose(self, job: SimJob) -> tuple[int, tuple[int, ...]] | None:
        if len(job.required) == 1 and not job.excluded:  # pinned: only that node
            index = self._index.get(job.required[0])
            if index is None:
                return None
            view = self.cluster.view(index)
            return (index, cards_slurm(job.request, view)) if fits(job.request, view) else None
        if self.unpinned == "weight":
            return by_weight(self.cluster, job.request, self._allowed(job))
        return self.placer.choose(job.request, self._allowed(job))

    def start(self, job: SimJob, now: float, node: int, cards: tuple[int, ...]) -> None:
        self.cluster.allocate(node, job.request, cards)
        del self.pending[job.job_id]
        self.running[job.job_id] = job
        job.state, job.start, job.node, job.cards = "RUNNING", now, node, cards
        if job.first_start is None:
            job.first_start = now
        heapq.heappush(self._finish, (now + job.runtime, job.job_id, job.restarts))

    def stop(self, job: SimJob, now: float) -> None:
        """Take a running job off its node (it finished, was requeued or cancelled)."""
        self.cluster.release(job.node, job.request, job.cards)
        del self.running[job.job_id]
        job.end = now
        job.runs.append((job.start if job.start is not None else now, now))

    def requeue(self, job: SimJob, now: float, *, hold: bool) -> None:
        self.stop(job, now)
        job.restarts += 1
        job.state, job.held, job.node, job.cards = "PENDING", hold, -1, ()
        job.eligible = now + self.requeue_delay_s
        heapq.heappush(self._wakes, job.eligible)
        self.pending[job.job_id] = job

    def cancel(self, job: SimJob, now: float) -> None:
        if job.job_id in self.running:
            self.stop(job, now)
        self.pending.pop(job.job_id, None)
        job.state = "CANCELLED"
        self.finished.append(job)

    def _allowed(self, job: SimJob) -> npt.NDArray[np.bool_] | None:
        if not job.required and not job.excluded:
            return None
        n = len(self.cluster.names)
        mask = np.zeros(n, dtype=bool) if job.required else np.ones(n, dtype=bool)
        for name in job.required:
            if name in self._index:
                mask[self._index[name]] = True
        for name in job.excluded:
            if name in self._index:
                mask[self._index[name]] = False
        return mask

    def _signature(self) -> tuple[int, int, int]:
        held = sum(1 for j in self.pending.values() if j.held)
        factors = hash(tuple(j.site_factor for j in self.pending.values()))
        return held, len(self.pending), factors

    def _sample(self, now: float) -> None:
        units = self.grid.units
        allocated = self.cluster.allocated_units / units
        waiting = sum(j.gpu for j in self.pending.values())
        sample = Sample(now, allocated, allocated + waiting)
        if self.samples and self.samples[-1].time == now:
            self.samples[-1] = sample
        else:
            self.samples.append(sample)


def _may_fit(request: Request, room: tuple[int, int, int, int], grid: Grid) -> bool:
    """A cheap necessary condition: no node has more than ``room`` of anything."""
    cpu, mem, card, full = room
    if request.cpu_milli > cpu or request.mem_mib > mem:
        return False
    if request.is_fractional:
        return grid.to_units(request.gpu_milli) <= card
    return request.gpu_count <= full


def mean_where(values: Sequence[float], weights: Sequence[float]) -> float:
    """Weighted mean, NaN without weight."""
    total = sum(weights)
    return sum(v * w for v, w in zip(values, weights, strict=True)) / total if total else math.nan
