"""Energy per job: the node agent's power samples integrated over time, per job and node.

The node agent appends ``{"ts", "job", "node", "watts", "power"}`` lines (the job's cards on
that node together; slurm_plugins/node/samples.py) to ``<dir>/<node>.jsonl``. An import
integrates them with the trapezoid rule into :class:`EnergyRecord` rows, continuing each from
the last sample it counted, so importing twice counts nothing twice and samples the agent has
since trimmed are not lost. A gap longer than ``max_gap_s`` (the agent was down) is not
guessed at. Reports sum the rows beside card-hours, attributed to the period the job ended in.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path

from sqlalchemy import ColumnElement, Connection, and_, case, func, select
from sqlalchemy.orm import InstrumentedAttribute, Session

from accounting.energy_models import J_PER_KWH, EnergyRecord
from accounting.models import UsageRecord

#: three missed samples at the agent's default 30 s interval and a little more
DEFAULT_MAX_GAP_S = 100.0
KWH_PLACES = Decimal("0.000001")


@dataclass(frozen=True, slots=True)
class Point:
    ts: float
    watts: float


@dataclass(frozen=True, slots=True)
class Series:
    """One job's power on one node, oldest first, and whether it was measured or made up."""

    job_id: int
    node: str
    points: tuple[Point, ...]
    source: str = "measured"


@dataclass(frozen=True, slots=True)
class Imported:
    jobs: int
    samples: int
    joules: int


def read_power(directory: Path) -> list[Series]:
    """Every job's power samples in every node's file; lines without ``watts`` (a source
    that reads no power) and unreadable lines are left out."""
    found: dict[tuple[int, str], tuple[list[Point], str]] = {}
    for f in sorted(directory.glob("*.jsonl")) if directory.is_dir() else ():
        try:
            text = f.read_text(encoding="utf-8")
        except OSError:
            continue
        for line in text.splitlines():
            try:
                d = json.loads(line)
                ts, job, watts = float(d["ts"]), int(d["job"]), float(d["watts"])
                node = str(d.get("node") or f.stem)
            except (ValueError, KeyError, TypeError):
                continue
            if watts < 0:
                continue
            points, _ = found.setdefault((job, node), ([], "measured"))
            points.append(Point(ts, watts))
            if d.get("power") == "fake":  # one made-up figure makes the whole series made up
                found[(job, node)] = (points, "fake")
    return [
        Series(job, node, tuple(sorted(pts, key=lambda p: p.ts)), source)
        for (job, node), (pts, source) in sorted(found.items())
    ]


def integrate(
    points: Sequence[Point], before: Point | None = None, max_gap_s: float = DEFAULT_MAX_GAP_S
) -> float:
    """Joules over ``points`` (trapezoids), continuing from ``before``; gaps longer than
    ``max_gap_s`` count nothing."""
    total, prev = 0.0, before
    for p in points:
        if prev is not None and 0 < p.ts - prev.ts <= max_gap_s:
            total += (p.ts - prev.ts) * (p.watts + prev.watts) / 2
        prev = p
    return total


def import_energy(
    session: Session,
    cluster: str,
    series: Iterable[Series],
    *,
    max_gap_s: float = DEFAULT_MAX_GAP_S,
) -> Imported:
    """Add the samples newer than each row's last one; the caller commits."""
    jobs = samples = joules = 0
    for s in series:
        row = session.scalars(
            select(EnergyRecord).where(
                EnergyRecord.cluster == cluster,
                EnergyRecord.job_id == s.job_id,
                EnergyRecord.node == s.node,
            )
        ).one_or_none()
        before = Point(row.last_ts, row.last_w) if row is not None else None
        new = [p for p in s.points if before is None or p.ts > before.ts]
        if not new:
            continue
        added = round(integrate(new, before, max_gap_s))
        if row is None:
            row = EnergyRecord(
                cluster=cluster, job_id=s.job_id, node=s.node, energy_j=0, samples=0,
                first_ts=new[0].ts, source=s.source,
            )  # fmt: skip
            session.add(row)
        row.energy_j += added
        row.samples += len(new)
        row.last_ts, row.last_w = new[-1].ts, new[-1].watts
        if s.source == "fake":
            row.source = "fake"
        jobs, samples, joules = jobs + 1, samples + len(new), joules + added
    return Imported(jobs, samples, joules)


def kwh(joules: int) -> Decimal:
    return (Decimal(joules) / J_PER_KWH).quantize(KWH_PLACES)


@dataclass(frozen=True, slots=True)
class JobEnergy:
    job_id: int
    kwh: Decimal
    nodes: int
    #: ``measured``, or ``fake`` where any node's figures were made up (the lab)
    source: str


def job_energy(conn: Connection, cluster: str, job_ids: Iterable[int]) -> dict[int, JobEnergy]:
    """Each job's energy over all its nodes."""
    ids = list(job_ids)
    if not ids:
        return {}
    fake = func.sum(case((EnergyRecord.source == "fake", 1), else_=0))
    q = (
        select(EnergyRecord.job_id, func.sum(EnergyRecord.energy_j), func.count(), fake)
        .where(EnergyRecord.cluster == cluster, EnergyRecord.job_id.in_(ids))
        .group_by(EnergyRecord.job_id)
    )
    return {
        int(job): JobEnergy(int(job), kwh(int(j or 0)), int(n), "fake" if f else "measured")
        for job, j, n, f in conn.execute(q)
    }


def energy_by(
    conn: Connection,
    start: datetime,
    end: datetime,
    column: InstrumentedAttribute[str],
    *,
    where: Mapping[InstrumentedAttribute[str], Iterable[str]] | None = None,
    scope: ColumnElement[bool] | None = None,
) -> dict[str, Decimal]:
    """kWh of the jobs that ended in [start, end), grouped by a :class:`UsageRecord` column;
    ``where`` and ``scope`` narrow the job rows as a report's filters and tenant scope do."""
    joined = and_(
        EnergyRecord.cluster == UsageRecord.cluster,
        EnergyRecord.job_id == UsageRecord.job_id,
        UsageRecord.step == "",
    )
    q = (
        select(column, func.sum(EnergyRecord.energy_j))
        .select_from(EnergyRecord)
        .join(UsageRecord, joined)
        .where(UsageRecord.end_time >= start, UsageRecord.end_time < end)
        .group_by(column)
    )
    for col, values in (where or {}).items():
        q = q.where(col.in_(list(values)))
    if scope is not None:
        q = q.where(scope)
    return {str(k): kwh(int(j or 0)) for k, j in conn.execute(q)}
