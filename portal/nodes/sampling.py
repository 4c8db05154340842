"""The capacity sampler of the control daemon: snapshot → plan → apply, one pass per interval.

A pass reads every cluster once (nodes and queue, through the portal's Slurm port), plans the
rows of this interval (pure: :func:`plan`) and writes them (:func:`apply`, the only writer of
:class:`~portal.nodes.models.CapacitySample`):

- per cluster, partition and kind (``gpu`` and ``npu`` in cards, shards and vNPUs as their
  share; ``cpu`` in cores): total, used and free, counted by
  :mod:`slurm_plugins.client.capacity` as every page counts them; the jobs pending and running
  in the partition that ask for that kind, and the mean and longest wait of the pending ones;
- per node and kind of card: total, used and free (per-node utilisation).

Retention: minute rows are kept ``keep_minutes`` (48 h), then rolled up into one row per hour
(means; the longest wait stays the longest) and kept ``keep_hours`` (400 days). Requests only
read the rows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import astuple, dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session

from portal.nodes.models import NODE, PARTITION, CapacitySample
from portal.slurm import ClusterRead
from slurm_plugins.client import capacity
from slurm_plugins.client.capacity import Amount, Capacity
from slurm_plugins.client.models import Job

HOUR = 3600
KINDS = ("gpu", "npu", "cpu")


@dataclass(frozen=True, slots=True)
class Row:
    at: datetime
    step_s: int
    cluster: str
    scope: str
    name: str
    kind: str
    total: float
    used: float
    free: float
    pending: int = 0
    running: int = 0
    wait_mean_s: float = 0.0
    wait_max_s: float = 0.0

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.cluster, self.scope, self.name, self.kind)


@dataclass(frozen=True, slots=True)
class Plan:
    rows: tuple[Row, ...] = ()
    #: minute rows before this hour become hourly rows
    roll_before: datetime | None = None
    #: hourly rows before this are dropped
    drop_before: datetime | None = None


@dataclass(frozen=True, slots=True)
class Applied:
    inserted: int = 0
    rolled: int = 0  # minute rows rolled up
    hours: int = 0  # hourly rows made from them
    dropped: int = 0
    lines: list[str] = field(default_factory=list)


def job_kind(job: Job) -> str:
    """What kind of device a job asks for: GPU (whole or shards), NPU, else CPU only."""
    tres = job.tres_req if job.tres_req else job.tres_alloc
    if tres.gpus or tres.shards:
        return "gpu"
    if tres.npus:
        return "npu"
    return "cpu"


def _amount(cap: Capacity, kind: str) -> Amount:
    if kind == "cpu":
        return cap.cpus
    return cap.kind(kind).cards


Queue = dict[tuple[str, str], tuple[int, int, list[float]]]


def _queue(jobs: Iterable[Job], now: datetime) -> Queue:
    """(partition, kind) -> (pending, running, waits of the pending in seconds)."""
    out: Queue = {}
    for job in jobs:
        if not (job.is_pending or job.is_running):
            continue
        kind = job_kind(job)
        # a pending job may name several partitions; it waits in each of them
        for part in filter(None, job.partition.split(",")):
            pending, running, waits = out.get((part, kind), (0, 0, []))
            if job.is_pending:
                since = job.eligible_time or job.submit_time
                wait = max(0.0, (now - since).total_seconds()) if since else 0.0
                out[(part, kind)] = (pending + 1, running, [*waits, wait])
            else:
                out[(part, kind)] = (pending, running + 1, waits)
    return out


def sample(reads: Sequence[ClusterRead], now: datetime, step_s: int) -> list[Row]:
    """This interval's rows (pure). A cluster that did not answer has no rows: a gap in the
    chart, not a fall to zero."""
    rows: list[Row] = []
    for read in reads:
        if read.error is not None:
            continue
        parts = capacity.by_partition(read.nodes)
        queue = _queue(read.jobs, now)
        names = sorted(set(parts) | {p for p, _ in queue})
        for part in names:
            cap = parts.get(part, Capacity())
            for kind in KINDS:
                amount = _amount(cap, kind)
                pending, running, waits = queue.get((part, kind), (0, 0, []))
                if not amount.total and not pending and not running:
                    continue
                rows.append(
                    Row(
                        now,
                        step_s,
                        read.name,
                        PARTITION,
                        part,
                        kind,
                        float(amount.total),
                        float(amount.used),
                        float(amount.free),
                        pending,
                        running,
                        sum(waits) / len(waits) if waits else 0.0,
                        max(waits, default=0.0),
                    )
                )
        for node in read.nodes:
            cap = capacity.node_capacity(node)
            for cards in cap.cards:
                if cards.cards.total:
                    a = cards.cards
                    rows.append(
                        Row(now, step_s, read.name, NODE, node.name, cards.kind, *_floats(a))
                    )
    return _merge_models(rows)


def _floats(a: Amount) -> tuple[float, float, float]:
    return float(a.total), float(a.used), float(a.free)


def _merge_models(rows: list[Row]) -> list[Row]:
    """A node with cards of two models has one row per kind (its models together)."""
    merged: dict[tuple[str, str, str, str], Row] = {}
    for r in rows:
        have = merged.get(r.key)
        if have is None:
            merged[r.key] = r
        else:
            merged[r.key] = Row(
                r.at,
                r.step_s,
                *r.key,
                have.total + r.total,
                have.used + r.used,
                have.free + r.free,
                have.pending + r.pending,
                have.running + r.running,
                max(have.wait_mean_s, r.wait_mean_s),
                max(have.wait_max_s, r.wait_max_s),
            )
    return list(merged.values())


def hour_of(t: datetime) -> datetime:
    return t.replace(minute=0, second=0, microsecond=0)


def plan(
    reads: Sequence[ClusterRead],
    now: datetime,
    *,
    step_s: int,
    keep_minutes: timedelta,
    keep_hours: timedelta,
) -> Plan:
    """What one pass writes: this interval's rows, and how far rows age out (pure)."""
    return Plan(
        rows=tuple(sample(reads, now, step_s)),
        roll_before=hour_of(now - keep_minutes),
        drop_before=now - keep_hours,
    )


def roll_up(rows: Iterable[Row]) -> list[Row]:
    """Minute rows as one row per hour and series: means, the longest wait the longest (pure)."""
    groups: dict[tuple[datetime, tuple[str, str, str, str]], list[Row]] = defaultdict(list)
    for r in rows:
        groups[(hour_of(r.at), r.key)].append(r)
    out = []
    for (hour, (cluster, scope, name, kind)), rs in sorted(groups.items()):
        n = len(rs)
        out.append(
            Row(
                hour,
                HOUR,
                cluster,
                scope,
                name,
                kind,
                sum(r.total for r in rs) / n,
                sum(r.used for r in rs) / n,
                sum(r.free for r in rs) / n,
                round(sum(r.pending for r in rs) / n),
                round(sum(r.running for r in rs) / n),
                sum(r.wait_mean_s for r in rs) / n,
                max(r.wait_max_s for r in rs),
            )
        )
    return out


_COLUMNS = tuple(Row.__slots__)


def _values(row: Row) -> dict[str, object]:
    return dict(zip(_COLUMNS, astuple(row), strict=True))


def _row(s: CapacitySample) -> Row:
    return Row(**{c: getattr(s, c) for c in _COLUMNS})


def apply(session: Session, p: Plan, *, dry_run: bool = False) -> Applied:
    """Write the plan: insert the rows, roll aged minute rows up, drop aged hourly rows."""
    minutes = []
    if p.roll_before is not None:
        minutes = list(
            session.scalars(
                select(CapacitySample).where(
                    CapacitySample.step_s < HOUR, CapacitySample.at < p.roll_before
                )
            )
        )
    hours = roll_up(_row(s) for s in minutes)
    dropped = 0
    if p.drop_before is not None:
        dropped = len(
            session.scalars(
                select(CapacitySample.id).where(
                    CapacitySample.step_s >= HOUR, CapacitySample.at < p.drop_before
                )
            ).all()
        )
    lines = [f"samples: {len(p.rows)} row(s) at {p.rows[0].at:%H:%M:%S}"] if p.rows else []
    if minutes:
        lines.append(f"samples: {len(minutes)} minute row(s) rolled into {len(hours)} hourly")
    if dropped:
        lines.append(f"samples: {dropped} hourly row(s) older than {p.drop_before} dropped")
    if dry_run:
        return Applied(0, 0, 0, 0, [f"would: {line}" for line in lines])
    if p.rows:
        session.execute(insert(CapacitySample), [_values(r) for r in p.rows])
    if minutes:
        session.execute(
            delete(CapacitySample).where(
                CapacitySample.step_s < HOUR, CapacitySample.at < p.roll_before
            )
        )
        session.execute(insert(CapacitySample), [_values(r) for r in hours])
    if dropped:
        session.execute(
            delete(CapacitySample).where(
                CapacitySample.step_s >= HOUR, CapacitySample.at < p.drop_before
            )
        )
    session.commit()
    return Applied(len(p.rows), len(minutes), len(hours), dropped, lines)
