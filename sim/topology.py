"""A cluster with leaf switches and a job mix with multi-node gangs, replayed in virtual time.

The single-node trace simulator (:mod:`sim.runner`) has no switches and the Alibaba trace no
multi-node jobs, so this one is small and separate: whole cards per node, nodes named rack by
rack under their switch (as sites name them), and a seeded mix of gangs (multi-node training),
single-node jobs of whole cards and fractional work (which holds one card). Jobs arrive as a
Poisson stream sized to a target load; the queue is FIFO where the head fits and lets later
jobs start when the head does not (Slurm's backfill, without reservations). Placement is one
of :mod:`gres.placement_topology`'s strategies, so the same functions are measured that a
caller would use.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace

from gres.placement_topology import (
    GANG_PLACERS,
    SINGLE_PLACERS,
    Gang,
    SwitchNode,
    switches_used,
)


@dataclass(frozen=True, slots=True)
class SwitchCluster:
    """``switches`` leaf switches of ``nodes_per_switch`` nodes with ``cards`` cards each."""

    switches: int = 8
    nodes_per_switch: int = 8
    cards: int = 8

    def nodes(self) -> list[SwitchNode]:
        width = len(str(self.switches * self.nodes_per_switch))
        out = []
        for s in range(self.switches):
            for i in range(self.nodes_per_switch):
                number = s * self.nodes_per_switch + i + 1
                out.append(
                    SwitchNode(f"n{number:0{width}d}", f"leaf{s + 1}", self.cards, self.cards)
                )
        return out

    @property
    def total_cards(self) -> int:
        return self.switches * self.nodes_per_switch * self.cards


@dataclass(frozen=True, slots=True)
class TopoJob:
    """A job of ``nodes`` nodes with ``cards`` cards on each, for ``duration`` seconds."""

    name: str
    arrival: float
    duration: float
    nodes: int
    cards: int


@dataclass(frozen=True, slots=True)
class TopoResult:
    strategy: str
    gangs: int
    one_switch: int
    switches_per_gang: float
    mean_wait_s: float
    finished: int

    @property
    def share_one_switch(self) -> float:
        """Share of the multi-node jobs that ran under one switch."""
        return self.one_switch / self.gangs if self.gangs else 0.0


def synthetic_jobs(
    seed: int, count: int, cluster: SwitchCluster, load: float = 0.9
) -> list[TopoJob]:
    """A seeded mix: 30 % gangs of 2 to ``nodes_per_switch`` nodes (4 or all cards each), 40 %
    single-node jobs of 1, 2, 4 or all cards, 30 % fractional work on one card."""
    rng = random.Random(seed)  # noqa: S311 - a reproducible job stream, not a secret
    shapes: list[tuple[int, int, float]] = []  # nodes, cards, duration
    for _ in range(count):
        kind = rng.random()
        if kind < 0.3:
            nodes = rng.randint(2, cluster.nodes_per_switch)
            cards = rng.choice((cluster.cards // 2 or 1, cluster.cards))
            shapes.append((nodes, cards, rng.expovariate(1 / 7200)))
        elif kind < 0.7:
            cards = rng.choice((1, 2, 4, cluster.cards))
            shapes.append((1, min(cards, cluster.cards), rng.expovariate(1 / 3600)))
        else:
            shapes.append((1, 1, rng.expovariate(1 / 1800)))
    demand = sum(n * c * d for n, c, d in shapes) / count
    rate = load * cluster.total_cards / demand
    jobs, now = [], 0.0
    for i, (nodes, cards, duration) in enumerate(shapes):
        now += rng.expovariate(rate)
        jobs.append(TopoJob(f"j{i}", now, max(duration, 1.0), nodes, cards))
    return jobs


def simulate(
    cluster: SwitchCluster, jobs: Sequence[TopoJob], strategy: str, switch_wait_s: float = 0.0
) -> TopoResult:
    """Replay ``jobs`` with the named placement strategy (``first-fit`` or ``same-switch``).

    ``switch_wait_s`` is ``--switches=1@<wait>``: a gang that would span switches stays queued
    that long after its arrival, then takes what it gets."""
    place_gang, place_one = GANG_PLACERS[strategy], SINGLE_PLACERS[strategy]
    nodes = {n.name: n for n in cluster.nodes()}
    events: list[tuple[float, int, int]] = [(j.arrival, 1, i) for i, j in enumerate(jobs)]
    events += [(j.arrival + switch_wait_s, 2, i) for i, j in enumerate(jobs) if switch_wait_s]
    heapq.heapify(events)
    queue: list[int] = []
    running: dict[int, tuple[str, ...]] = {}
    gangs = one = spans = finished = 0
    waited = 0.0
    while events:
        now, kind, index = heapq.heappop(events)
        if kind == 0:  # an end: give the cards back
            for name in running.pop(index):
                node = nodes[name]
                nodes[name] = replace(node, free=node.free + jobs[index].cards)
            finished += 1
        elif kind == 1:
            queue.append(index)
        # kind 2: a gang's switch wait is over; the pass below places it if it can
        still: list[int] = []
        for i in queue:
            job = jobs[i]
            view = list(nodes.values())
            if job.nodes > 1:
                chosen = place_gang(Gang(job.nodes, job.cards), view)
            else:
                single = place_one(job.cards, view)
                chosen = None if single is None else (single,)
            spans_switches = (
                chosen is not None and job.nodes > 1 and switches_used(chosen, view) > 1
            )
            if chosen is None or (spans_switches and now < job.arrival + switch_wait_s):
                still.append(i)
                continue
            for name in chosen:
                node = nodes[name]
                nodes[name] = replace(node, free=node.free - job.cards)
            running[i] = chosen
            waited += now - job.arrival
            heapq.heappush(events, (now + job.duration, 0, i))
            if job.nodes > 1:
                used = switches_used(chosen, view)
                gangs += 1
                one += used == 1
                spans += used
        queue = still
    started = len(jobs) - len(queue)
    return TopoResult(
        strategy=strategy,
        gangs=gangs,
        one_switch=one,
        switches_per_gang=spans / gangs if gangs else 0.0,
        mean_wait_s=waited / started if started else 0.0,
        finished=finished,
    )
