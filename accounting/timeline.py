"""Usage over time and the jobs behind it: what the usage pages chart and drill down to.

:func:`series` sums card-hours per time bucket (an hour, a day or a month in the reader's time
zone), per group (project, user …), from the rollups; :func:`jobs` lists the metered jobs that
ran in a period. Both take the same filters and tenant scope as :func:`accounting.report.build`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from decimal import Decimal
from enum import StrEnum
from typing import Any

from sqlalchemy import ColumnElement, Connection, RowMapping, func, select

from accounting.models import UCS_PER_CARD_HOUR, Rollup, UsageRecord
from accounting.report import _COLUMN, PLACES, Dim, check_period


class Step(StrEnum):
    """The width of a bucket of a series."""

    HOUR = "hour"
    DAY = "day"
    MONTH = "month"


def step_for(start: datetime, end: datetime) -> Step:
    """Hours for up to two days, days for up to about three months, months beyond."""
    span = end - start
    if span <= timedelta(days=2):
        return Step.HOUR
    return Step.DAY if span <= timedelta(days=93) else Step.MONTH


def floor(t: datetime, step: Step, zone: tzinfo) -> datetime:
    """The start of the bucket ``t`` falls in, in ``zone``."""
    local = t.astimezone(zone).replace(minute=0, second=0, microsecond=0)
    if step is not Step.HOUR:
        local = local.replace(hour=0)
    if step is Step.MONTH:
        local = local.replace(day=1)
    return local


def advance(t: datetime, step: Step) -> datetime:
    if step is Step.HOUR:
        return t + timedelta(hours=1)
    if step is Step.DAY:
        return (t + timedelta(days=1, hours=2)).replace(hour=0)  # a DST day is 23 or 25 h
    return (t.replace(day=28) + timedelta(days=4)).replace(day=1)


def buckets(start: datetime, end: datetime, step: Step, zone: tzinfo) -> list[datetime]:
    out, t = [], floor(start, step, zone)
    while t < end:
        out.append(t)
        t = advance(t, step)
    return out


@dataclass(frozen=True, slots=True)
class Series:
    """Card-hours per bucket: ``values[i][j]`` is group ``keys[i]`` in bucket ``starts[j]``.
    The largest groups come first; the rest are summed in ``other`` (``None``: no rest)."""

    step: Step
    starts: tuple[datetime, ...]
    keys: tuple[str, ...]
    values: tuple[tuple[Decimal, ...], ...]
    other: tuple[Decimal, ...] | None = None

    @property
    def totals(self) -> tuple[Decimal, ...]:
        rows = [*self.values, *([self.other] if self.other else [])]
        if not rows:
            return tuple(Decimal(0) for _ in self.starts)
        return tuple(sum(col, Decimal(0)) for col in zip(*rows, strict=True))

    @property
    def empty(self) -> bool:
        return not any(self.totals)


def _filtered(q: Any, where: Mapping[Dim, Iterable[str]], scope: Any) -> Any:
    for d, values in where.items():
        q = q.where(_COLUMN[d].in_(list(values)))
    return q.where(scope) if scope is not None else q


def series(
    conn: Connection,
    start: datetime,
    end: datetime,
    *,
    by: Dim | None = None,
    step: Step | None = None,
    zone: tzinfo,
    where: Mapping[Dim, Iterable[str]] | None = None,
    scope: ColumnElement[bool] | None = None,
    top: int = 6,
) -> Series:
    """GPU and NPU card-hours over [start, end) per bucket, per group of ``by`` (or in all).

    Hours and days come from the hourly rollups (so that a day is the reader's day, whatever
    their time zone), months from the daily ones.
    """
    check_period(start, end)
    step = step or step_for(start, end)
    period = "day" if step is Step.MONTH else "hour"
    key = _COLUMN[by] if by is not None else None
    used = func.sum(Rollup.gpu_ucs) + func.sum(Rollup.npu_ucs)
    cols = [Rollup.start, *([key] if key is not None else []), used]
    q = select(*cols).where(Rollup.period == period, Rollup.start >= start, Rollup.start < end)
    groups = [Rollup.start, *([key] if key is not None else [])]
    q = _filtered(q, where or {}, scope).group_by(*groups)
    starts = buckets(start, end, step, zone)
    index = {t: i for i, t in enumerate(starts)}
    sums: dict[str, list[int]] = {}
    for row in conn.execute(q):
        name = str(row[1]) if key is not None else ""
        slot = index.get(floor(row[0], step, zone))
        if slot is not None:
            sums.setdefault(name, [0] * len(starts))[slot] += int(row[-1] or 0)
    ranked = sorted(sums, key=lambda k: (-sum(sums[k]), k))
    shown, rest = ranked[:top], ranked[top:]
    other = [sum(sums[k][i] for k in rest) for i in range(len(starts))] if rest else None
    return Series(
        step,
        tuple(starts),
        tuple(shown),
        tuple(tuple(_hours(v) for v in sums[k]) for k in shown),
        tuple(_hours(v) for v in other) if other is not None else None,
    )


def _hours(ucs: int) -> Decimal:
    return (Decimal(ucs) / UCS_PER_CARD_HOUR).quantize(PLACES)


@dataclass(frozen=True, slots=True)
class JobUse:
    """One metered job: what it held over its whole run."""

    cluster: str
    job_id: int
    user: str
    project: str
    pool: str
    state: str
    start: datetime
    end: datetime
    finished: bool
    gpu_model: str
    gpu_card_hours: Decimal
    npu_model: str
    npu_card_hours: Decimal
    cpu_hours: Decimal
    wait_min: Decimal


def jobs(
    conn: Connection,
    start: datetime,
    end: datetime,
    *,
    where: Mapping[Dim, Iterable[str]] | None = None,
    scope: ColumnElement[bool] | None = None,
    limit: int = 200,
) -> list[JobUse]:
    """The jobs that ran at some time in [start, end), newest first, at most ``limit``.
    ``where`` and ``scope`` name :class:`~accounting.models.UsageRecord`'s columns the way
    they name the rollups' (user, account, domain, partition …)."""
    check_period(start, end)
    r = UsageRecord
    q = select(*r.__table__.columns).where(r.step == "", r.start_time < end, r.end_time >= start)
    for d, values in (where or {}).items():
        q = q.where(getattr(r, _COLUMN[d].key).in_(list(values)))
    if scope is not None:
        q = q.where(scope)
    q = q.order_by(r.start_time.desc(), r.job_id.desc()).limit(limit)
    return [_job(row._mapping) for row in conn.execute(q)]


def _job(r: RowMapping) -> JobUse:
    return JobUse(
        cluster=r["cluster"],
        job_id=int(r["job_id"]),
        user=r["user"],
        project=r["account"],
        pool=r["partition"],
        state=r["state"],
        start=r["start_time"],
        end=r["end_time"],
        finished=bool(r["finished"]),
        gpu_model=r["gpu_type"],
        gpu_card_hours=_hours(r["gpu_ucs"]),
        npu_model=r["npu_type"],
        npu_card_hours=_hours(r["npu_ucs"]),
        cpu_hours=(Decimal(r["cpu_s"]) / 3600).quantize(PLACES),
        wait_min=(Decimal(r["wait_s"]) / 60).quantize(PLACES),
    )
