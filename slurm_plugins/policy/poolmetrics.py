"""Pool metrics: cards, slices and queues of a cluster, from the client's models.

Cards are counted by :mod:`slurm_plugins.client.capacity` and nowhere else: these functions
only turn its :class:`~slurm_plugins.client.capacity.Capacity` into metric families (cards
may be fractions: 8 shards of a 32-shard card are 0.25 card). Pure functions of nodes, jobs
and the time, so a test gives recorded ``sinfo``/``squeue`` output and reads exact values.

Fragmentation is free capacity stranded on cards that something already runs on: free card
capacity that no whole-card job can have (``free - whole free``), and its share of the free.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from plumbing.metrics import name
from slurm_plugins.client.capacity import Capacity, Cards, by_partition, node_capacity, total
from slurm_plugins.client.models import Job, Node

STATES = ("used", "free", "unavailable")


@dataclass(frozen=True, slots=True)
class PoolView:
    """What a daemon read last: one cluster's nodes and jobs, and when."""

    cluster: str
    nodes: Sequence[Node]
    jobs: Sequence[Job]
    now: float


def _cards(
    scope: str, labels: Sequence[str], rows: Iterable[tuple[Sequence[str], Capacity]]
) -> list[Metric]:
    """Cards, whole cards free and slices of each (kind, model) of each row's capacity."""
    cards = GaugeMetricFamily(
        name(scope, "cards"),
        f"Cards per {scope}, kind and model by state (used, free, unavailable); "
        "shards and vNPUs count as their share of a card.",
        labels=[*labels, "kind", "model", "state"],
    )
    whole = GaugeMetricFamily(
        name(scope, "free_whole_cards"),
        f"Cards per {scope} nothing runs on: what a whole-card job can have now.",
        labels=[*labels, "kind", "model"],
    )
    slices = GaugeMetricFamily(
        name(scope, "slices"),
        f"GPU shards and vNPUs per {scope}, counted one by one, by type and state.",
        labels=[*labels, "kind", "model", "type", "state"],
    )
    for values, cap in rows:
        for c in cap.cards:
            a = c.cards
            for state, v in zip(STATES, (a.used, a.free, a.unavailable), strict=True):
                cards.add_metric([*values, c.kind, c.model, state], float(v))
            whole.add_metric([*values, c.kind, c.model], float(c.whole_free))
            for s in c.slices:
                u = s.units
                for state, v in zip(STATES, (u.used, u.free, u.unavailable), strict=True):
                    slices.add_metric([*values, c.kind, c.model, s.type, state], float(v))
    return [cards, whole, slices]


def stranded(cards: Cards) -> float:
    """Free card capacity no whole-card job can have: leftovers on cards in use."""
    return max(0.0, float(cards.cards.free) - cards.whole_free)


def _fragmentation(cluster: str, pool: Capacity) -> list[Metric]:
    left = GaugeMetricFamily(
        name("pool", "stranded_cards"),
        "Free card capacity stranded as leftovers on cards something already runs on.",
        labels=["cluster", "kind", "model"],
    )
    ratio = GaugeMetricFamily(
        name("pool", "fragmentation_ratio"),
        "Share (0-1) of the free card capacity that is stranded as leftovers.",
        labels=["cluster", "kind", "model"],
    )
    for c in pool.cards:
        free = float(c.cards.free)
        left.add_metric([cluster, c.kind, c.model], stranded(c))
        ratio.add_metric([cluster, c.kind, c.model], stranded(c) / free if free else 0.0)
    return [left, ratio]


def capacity_families(cluster: str, nodes: Sequence[Node]) -> list[Metric]:
    """Cards and slices per node, partition and the pool; fragmentation of the pool."""
    per_node = [(n, node_capacity(n)) for n in nodes]
    pool = total(c for _, c in per_node)
    nodes_up = GaugeMetricFamily(
        name("pool", "nodes"),
        "Nodes of the cluster by whether they take new work.",
        labels=["cluster", "state"],
    )
    up = sum(1 for n in nodes if n.available)
    nodes_up.add_metric([cluster, "available"], up)
    nodes_up.add_metric([cluster, "unavailable"], len(nodes) - up)
    return [
        nodes_up,
        *_cards("node", ["cluster", "node"], (((cluster, n.name), c) for n, c in per_node)),
        *_cards(
            "partition",
            ["cluster", "partition"],
            (((cluster, p), c) for p, c in by_partition(nodes, [c for _, c in per_node]).items()),
        ),
        *_cards("pool", ["cluster"], [((cluster,), pool)]),
        *_fragmentation(cluster, pool),
    ]


def queue_families(
    cluster: str,
    jobs: Sequence[Job],
    now: float,
    tenant_of: Callable[[str], str] = lambda account: account,
) -> list[Metric]:
    """Pending and running jobs per partition, QOS and tenant; how long the pending ones
    have waited so far (sum and longest, in seconds) and how long the running ones waited
    before they started (sum)."""
    labels = ["cluster", "partition", "qos", "tenant"]
    count = GaugeMetricFamily(
        name("jobs"), "Jobs by state (pending, running).", labels=[*labels, "state"]
    )
    wait_sum = GaugeMetricFamily(
        name("jobs", "pending_waited_seconds"),
        "Time the pending jobs have waited so far, added up (divide by the pending count).",
        labels=labels,
    )
    wait_max = GaugeMetricFamily(
        name("jobs", "pending_longest_wait_seconds"),
        "The longest time a pending job has waited so far.",
        labels=labels,
    )
    ran_sum = GaugeMetricFamily(
        name("jobs", "running_waited_seconds"),
        "Time the running jobs waited from submission to start, added up (divide by the "
        "running count).",
        labels=labels,
    )
    counts: dict[tuple[str, ...], int] = defaultdict(int)
    waits: dict[tuple[str, ...], list[float]] = defaultdict(list)
    waited: dict[tuple[str, ...], float] = defaultdict(float)
    for j in jobs:
        if not (j.is_pending or j.is_running):
            continue
        key = (cluster, j.partition, j.qos, tenant_of(j.account))
        counts[(*key, "pending" if j.is_pending else "running")] += 1
        if j.is_pending:
            since = j.submit_time.timestamp() if j.submit_time else now
            waits[key].append(max(0.0, now - since))
        elif j.submit_time and j.start_time:
            waited[key] += max(0.0, (j.start_time - j.submit_time).total_seconds())
        else:
            waited[key] += 0.0  # a running job Slurm gave no times for still has a series
    for k, n in sorted(counts.items()):
        count.add_metric(list(k), n)
    for k, w in sorted(waits.items()):
        wait_sum.add_metric(list(k), sum(w))
        wait_max.add_metric(list(k), max(w))
    for k, seconds in sorted(waited.items()):
        ran_sum.add_metric(list(k), seconds)
    return [count, wait_sum, wait_max, ran_sum]


def pool_families(
    view: PoolView | None, tenant_of: Callable[[str], str] = lambda account: account
) -> list[Metric]:
    """Every pool family of a view; nothing before the first read."""
    if view is None:
        return []
    return [
        *capacity_families(view.cluster, view.nodes),
        *queue_families(view.cluster, view.jobs, view.now, tenant_of),
    ]
