"""Capacity over a window, from the sampler's rows (:mod:`portal.nodes.sampling`), as the
charts draw it: one time axis and, per series, one value per point (``None`` for a gap).

Requests only read. A window of up to a day reads minute rows; longer windows read hourly
rows and, for the last two days, minute rows rolled into hours the same way. Points are
bucketed so that a chart has a few hundred of them at most.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from portal.nodes.models import NODE, PARTITION, CapacitySample
from portal.nodes.sampling import HOUR

#: the windows a chart offers -> (seconds, seconds per point)
WINDOWS: Mapping[str, tuple[int, int]] = {
    "1h": (3600, 60),
    "6h": (6 * 3600, 120),
    "1d": (86400, 300),
    "7d": (7 * 86400, HOUR),
    "30d": (30 * 86400, 4 * HOUR),
}
DEFAULT_WINDOW = "6h"


@dataclass(frozen=True, slots=True)
class Point:
    """One sample row as the series read it."""

    at: float  # epoch seconds
    scope: str
    name: str
    kind: str
    total: float
    used: float
    free: float
    pending: int
    running: int
    wait_mean_s: float
    wait_max_s: float


def _bucket(at: float, start: float, step: int) -> int:
    return int((at - start) // step)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def build(points: Iterable[Point], start: float, end: float, step: int) -> dict[str, Any]:
    """The charts' data (pure): the time axis; the pool per kind (cards: the sum of the nodes'
    rows, so a node in two partitions counts once; CPUs: the partitions' rows), its
    utilisation (used / total, percent), the queue per partition and kind (pending, running,
    mean and longest wait in minutes), and each node's utilisation of its cards."""
    n = max(1, int((end - start) // step))
    t = [start + i * step for i in range(n)]
    # per bucket, per series: the samples' values
    pool_nodes: dict[tuple[str, str, int], dict[float, list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    pool_parts: dict[tuple[str, str, int], dict[float, list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    queue: dict[tuple[str, str, str, int], list[float]] = defaultdict(list)
    nodes: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    for p in points:
        b = _bucket(p.at, start, step)
        if not 0 <= b < n:
            continue
        values = {"total": p.total, "used": p.used, "free": p.free}
        if p.scope == NODE:
            for what, v in values.items():
                pool_nodes[(p.kind, what, b)][p.at].append(v)
            if p.total:
                nodes[(p.name, p.kind, b)].append(100 * p.used / p.total)
        elif p.scope == PARTITION:
            for what, v in values.items():
                pool_parts[(p.kind, what, b)][p.at].append(v)
            for what, v in (
                ("pending", float(p.pending)),
                ("running", float(p.running)),
                ("wait_mean_m", p.wait_mean_s / 60),
                ("wait_max_m", p.wait_max_s / 60),
            ):
                queue[(p.name, p.kind, what, b)].append(v)

    def pool_series(kind: str, what: str) -> list[float | None]:
        out: list[float | None] = []
        for b in range(n):
            # cards: the nodes' rows (each node once); CPUs: the partitions' rows
            by_time = pool_nodes.get((kind, what, b)) or pool_parts.get((kind, what, b)) or {}
            out.append(_mean([sum(v) for v in by_time.values()]))
        return out

    kinds = sorted({k for k, _, _ in pool_nodes} | {k for k, _, _ in pool_parts})
    pool = {k: {w: pool_series(k, w) for w in ("used", "free", "total")} for k in kinds}
    util = {
        k: [
            None if u is None or not tot else round(100 * u / tot, 2)
            for u, tot in zip(pool[k]["used"], pool[k]["total"], strict=True)
        ]
        for k in kinds
    }
    partitions: dict[str, dict[str, dict[str, list[float | None]]]] = {}
    for name, kind, what, _ in queue:
        partitions.setdefault(name, {}).setdefault(kind, {})[what] = [
            _mean(queue.get((name, kind, what, b), [])) for b in range(n)
        ]
    per_node: dict[str, dict[str, list[float | None]]] = {}
    for name, kind, _ in nodes:
        per_node.setdefault(name, {})[kind] = [
            _mean(nodes.get((name, kind, b), [])) for b in range(n)
        ]
    return {
        "start": start,
        "end": end,
        "step": step,
        "t": t,
        "pool": pool,
        "utilisation": util,
        "partitions": {k: partitions[k] for k in sorted(partitions)},
        "nodes": {k: per_node[k] for k in sorted(per_node)},
    }


def read(
    session: Session, window: str, now: datetime, *, cluster: str | None = None
) -> dict[str, Any]:
    """The charts' data over ``window`` (one of :data:`WINDOWS`) up to ``now``."""
    seconds, step = WINDOWS[window]
    end = now.timestamp() // step * step + step
    start = end - seconds
    since = datetime.fromtimestamp(start, UTC)
    stmt = select(
        CapacitySample.at,
        CapacitySample.scope,
        CapacitySample.name,
        CapacitySample.kind,
        CapacitySample.total,
        CapacitySample.used,
        CapacitySample.free,
        CapacitySample.pending,
        CapacitySample.running,
        CapacitySample.wait_mean_s,
        CapacitySample.wait_max_s,
    ).where(CapacitySample.at >= since)
    if step < HOUR:
        stmt = stmt.where(CapacitySample.step_s < HOUR)
    if cluster:
        stmt = stmt.where(CapacitySample.cluster == cluster)
    points = (
        Point(row[0].timestamp(), *row[1:])
        for row in session.execute(stmt.order_by(CapacitySample.at))
    )
    return {"window": window, **build(points, start, end, step)}


@dataclass(frozen=True, slots=True)
class Summary:
    """The window in numbers (the charts' text alternative): per kind the mean and the
    highest utilisation, per partition the most jobs pending and the longest wait."""

    kinds: dict[str, tuple[float | None, float | None]]
    partitions: dict[str, tuple[float | None, float | None]]
    points: int


def summary(data: Mapping[str, Any]) -> Summary:
    kinds = {}
    for kind, values in data["utilisation"].items():
        seen = [v for v in values if v is not None]
        kinds[kind] = (_mean(seen), max(seen, default=None))
    parts = {}
    for name, by_kind in data["partitions"].items():
        pending = [v for s in by_kind.values() for v in s.get("pending", []) if v is not None]
        waits = [v for s in by_kind.values() for v in s.get("wait_max_m", []) if v is not None]
        parts[name] = (max(pending, default=None), max(waits, default=None))
    points = sum(1 for v in zip(*data["utilisation"].values(), strict=True) if any(v))
    return Summary(kinds, parts, points)
