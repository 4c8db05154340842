"""Energy saved by elastic nodes, recorded: the power programs' event log
(:mod:`slurm_plugins.power`) imported as powered-down spans, and the kWh they saved in a period
(hours off x the node's idle watts).

Importing is idempotent: a span is keyed by its node and start; a span still open (the node is
still off) is closed by a later import once the log has its resume.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal

from sqlalchemy import Connection, or_, select
from sqlalchemy.orm import Session

from accounting.energy import KWH_PLACES
from accounting.power_models import PowerOffSpan
from slurm_plugins.power.plan import Event, off_spans


@dataclass(frozen=True, slots=True)
class ImportedSpans:
    added: int
    closed: int


def import_power_off(
    session: Session, cluster: str, events: Iterable[Event], watts: Callable[[str], float]
) -> ImportedSpans:
    """Record the log's powered-down spans; the caller commits."""
    added = closed = 0
    for node, spans in off_spans(events).items():
        for start, end in spans:
            row = session.scalars(
                select(PowerOffSpan).where(
                    PowerOffSpan.cluster == cluster,
                    PowerOffSpan.node == node,
                    PowerOffSpan.start_ts == start,
                )
            ).one_or_none()
            if row is None:
                session.add(
                    PowerOffSpan(
                        cluster=cluster, node=node, start_ts=start, end_ts=end, watts=watts(node)
                    )
                )
                added += 1
            elif row.end_ts is None and end is not None:
                row.end_ts = end
                closed += 1
    return ImportedSpans(added, closed)


def saved_kwh(
    conn: Connection, since: float, until: float, *, cluster: str | None = None
) -> dict[str, Decimal]:
    """kWh each node saved while powered down inside ``[since, until)`` (open spans count up
    to ``until``), by node."""
    q = select(PowerOffSpan.node, PowerOffSpan.start_ts, PowerOffSpan.end_ts, PowerOffSpan.watts)
    q = q.where(
        PowerOffSpan.start_ts < until,
        or_(PowerOffSpan.end_ts.is_(None), PowerOffSpan.end_ts > since),
    )
    if cluster is not None:
        q = q.where(PowerOffSpan.cluster == cluster)
    joules: dict[str, float] = {}
    for node, start, end, watts in conn.execute(q):
        off = min(until if end is None else end, until) - max(start, since)
        joules[node] = joules.get(node, 0.0) + max(0.0, off) * watts
    return {
        n: (Decimal(j) / Decimal(3_600_000)).quantize(KWH_PLACES) for n, j in sorted(joules.items())
    }
