"""Usage reports over any whole-hour period, read from the rollups only.

A period is covered by the coarsest rollups that fit: whole months, then whole days, then
hours at the edges. Amounts come back as :class:`~decimal.Decimal` card-hours, CPU-hours and
GiB-hours, rounded to 4 places, with the kWh of the jobs that ended in the period beside them
(from the job rows and :mod:`accounting.energy`, not the rollups).
"""

from __future__ import annotations

import calendar
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from enum import StrEnum

from sqlalchemy import ColumnElement, Connection, and_, func, or_, select

from accounting.energy import energy_by
from accounting.models import UCS_PER_CARD_HOUR, Rollup, UsageRecord
from slurm_plugins.client.models import Node
from translations import N_, Message

PLACES = Decimal("0.0001")


class Dim(StrEnum):
    """What a report groups by."""

    DOMAIN = "domain"
    PROJECT = "project"
    USER = "user"
    GPU_TYPE = "gpu_type"
    NPU_TYPE = "npu_type"
    POOL = "pool"
    CLUSTER = "cluster"


_COLUMN = {
    Dim.DOMAIN: Rollup.domain,
    Dim.PROJECT: Rollup.account,
    Dim.USER: Rollup.user,
    Dim.GPU_TYPE: Rollup.gpu_type,
    Dim.NPU_TYPE: Rollup.npu_type,
    Dim.POOL: Rollup.partition,
    Dim.CLUSTER: Rollup.cluster,
}


class ReportError(ValueError):
    """A report request that cannot be answered; ``message`` says what is wrong, in any
    language (``str()`` is the English)."""

    def __init__(self, message: Message) -> None:
        super().__init__(str(message))
        self.message = message


_RANGE = N_("%(when)s is out of range (years 1970 to 9000).")


@dataclass(frozen=True, slots=True)
class Line:
    key: str
    jobs: int
    gpu_card_hours: Decimal
    npu_card_hours: Decimal
    cpu_hours: Decimal
    mem_gib_hours: Decimal
    avg_wait_min: Decimal
    #: the cards' energy of the jobs that ended in the period (accounting.energy)
    kwh: Decimal = Decimal(0)

    @property
    def card_hours(self) -> Decimal:
        return self.gpu_card_hours + self.npu_card_hours


@dataclass(frozen=True, slots=True)
class Utilisation:
    pool: str
    gpu_cards: int
    npu_cards: int
    gpu_card_hours: Decimal
    npu_card_hours: Decimal
    #: allocated card-hours ÷ available card-hours (GPUs and NPUs together)
    ratio: Decimal


@dataclass(frozen=True, slots=True)
class Report:
    start: datetime
    end: datetime
    by: Dim
    lines: tuple[Line, ...]
    total: Line
    utilisation: tuple[Utilisation, ...] = ()
    top_users: tuple[Line, ...] = field(default=())

    @property
    def hours(self) -> int:
        return int((self.end - self.start).total_seconds()) // 3600


def month_start(t: datetime) -> datetime:
    return datetime(t.year, t.month, 1, tzinfo=UTC)


def next_month(t: datetime) -> datetime:
    days = calendar.monthrange(t.year, t.month)[1]
    return month_start(t) + timedelta(days=days)


def parse_month(text: str) -> tuple[datetime, datetime]:
    """``2026-11`` -> [Nov 1, Dec 1) in UTC."""
    try:
        start = datetime.strptime(text, "%Y-%m").replace(tzinfo=UTC)
    except ValueError as exc:
        raise ReportError(
            Message.of(N_("The month %(month)s is not written YYYY-MM."), month=text)
        ) from exc
    if not 1970 <= start.year <= 9000:
        raise ReportError(Message.of(_RANGE, when=text))
    return start, next_month(start)


def check_period(start: datetime, end: datetime) -> None:
    if start.tzinfo is None or end.tzinfo is None:
        raise ReportError(Message.of(N_("The start and the end need a time zone.")))
    if end <= start:
        raise ReportError(
            Message.of(
                N_("The end %(end)s is not after the start %(start)s."),
                end=end.isoformat(),
                start=start.isoformat(),
            )
        )
    for t in (start, end):
        if t.minute or t.second or t.microsecond:
            raise ReportError(Message.of(N_("%(when)s is not a whole hour."), when=t.isoformat()))
        if not 1970 <= t.year <= 9000:
            raise ReportError(Message.of(_RANGE, when=t.isoformat()))


def cover(start: datetime, end: datetime) -> list[tuple[str, datetime, datetime]]:
    """The rollup ranges ``(period, from, to)`` that add up to exactly [start, end)."""
    check_period(start, end)
    start, end = start.astimezone(UTC), end.astimezone(UTC)
    out: list[tuple[str, datetime, datetime]] = []
    day = timedelta(days=1)
    first_day = start if start.hour == 0 else (start + day).replace(hour=0)
    last_day = end.replace(hour=0)
    if first_day >= last_day:
        return [("hour", start, end)]
    if start < first_day:
        out.append(("hour", start, first_day))
    first_month = first_day if first_day.day == 1 else next_month(first_day)
    last_month = month_start(last_day)
    if first_month < last_month:
        if first_day < first_month:
            out.append(("day", first_day, first_month))
        out.append(("month", first_month, last_month))
        if last_month < last_day:
            out.append(("day", last_month, last_day))
    else:
        out.append(("day", first_day, last_day))
    if last_day < end:
        out.append(("hour", last_day, end))
    return out


def _hours(ucs: int, per: int) -> Decimal:
    return (Decimal(ucs) / Decimal(per)).quantize(PLACES)


def _line(key: str, sums: tuple[int, ...]) -> Line:
    jobs, wait, gpu, npu, cpu, mem = sums
    return Line(
        key=key,
        jobs=jobs,
        gpu_card_hours=_hours(gpu, UCS_PER_CARD_HOUR),
        npu_card_hours=_hours(npu, UCS_PER_CARD_HOUR),
        cpu_hours=_hours(cpu, 3600),
        mem_gib_hours=_hours(mem, 3600 * 1024),
        avg_wait_min=(Decimal(wait) / Decimal(60 * jobs)).quantize(PLACES) if jobs else Decimal(0),
    )


_SUMS = (
    func.sum(Rollup.jobs),
    func.sum(Rollup.wait_s),
    func.sum(Rollup.gpu_ucs),
    func.sum(Rollup.npu_ucs),
    func.sum(Rollup.cpu_s),
    func.sum(Rollup.mem_mib_s),
)


def _grouped(
    conn: Connection,
    start: datetime,
    end: datetime,
    dim: Dim,
    *,
    where: Mapping[Dim, Iterable[str]],
    scope: ColumnElement[bool] | None = None,
) -> list[Line]:
    ranges = [
        and_(Rollup.period == p, Rollup.start >= lo, Rollup.start < hi)
        for p, lo, hi in cover(start, end)
    ]
    col = _COLUMN[dim]
    q = select(col, *_SUMS).where(or_(*ranges)).group_by(col)
    for d, values in where.items():
        q = q.where(_COLUMN[d].in_(list(values)))
    if scope is not None:
        q = q.where(scope)
    lines = [_line(str(k), tuple(int(x or 0) for x in rest)) for k, *rest in conn.execute(q)]
    return sorted(lines, key=lambda ln: (-ln.card_hours, -ln.cpu_hours, ln.key))


_JOB_COLUMN = {
    Dim.DOMAIN: UsageRecord.domain,
    Dim.PROJECT: UsageRecord.account,
    Dim.USER: UsageRecord.user,
    Dim.GPU_TYPE: UsageRecord.gpu_type,
    Dim.NPU_TYPE: UsageRecord.npu_type,
    Dim.POOL: UsageRecord.partition,
    Dim.CLUSTER: UsageRecord.cluster,
}


def _with_energy(
    conn: Connection,
    lines: list[Line],
    period: tuple[datetime, datetime, Dim],
    *,
    where: Mapping[Dim, Iterable[str]],
    scope: ColumnElement[bool] | None,
    unscoped: bool,
) -> list[Line]:
    """The lines with their kWh beside the card-hours; a scoped report needs the scope on
    the job rows too, else it shows none rather than another tenant's."""
    if scope is None and not unscoped:
        return lines
    start, end, by = period
    got = energy_by(
        conn,
        start,
        end,
        _JOB_COLUMN[by],
        where={_JOB_COLUMN[d]: v for d, v in where.items()},
        scope=scope,
    )
    return [replace(ln, kwh=got.get(ln.key, Decimal(0))) for ln in lines]


def capacity(nodes: Iterable[Node]) -> dict[str, tuple[int, int]]:
    """Cards per pool (partition): ``{"gpu": (8, 0), "npu": (0, 12)}``."""
    out: dict[str, tuple[int, int]] = {}
    for n in nodes:
        for p in n.partitions:
            g, c = out.get(p, (0, 0))
            out[p] = (g + n.gres_total("gpu"), c + n.gres_total("npu"))
    return out


def build(
    conn: Connection,
    start: datetime,
    end: datetime,
    by: Dim,
    *,
    where: Mapping[Dim, Iterable[str]] | None = None,
    pools: Mapping[str, tuple[int, int]] | None = None,
    top: int = 10,
    scope: ColumnElement[bool] | None = None,
    job_scope: ColumnElement[bool] | None = None,
) -> Report:
    """Usage by ``by`` over [start, end), with totals, pool utilisation and top users.

    ``where`` keeps only the listed values of some dimensions; ``scope`` is a further condition
    on :class:`Rollup` rows (the portal's tenant scoping), ``job_scope`` the same on
    :class:`UsageRecord` rows, for the energy: without it a scoped report shows no kWh.
    """
    where = where or {}
    lines = _with_energy(
        conn,
        _grouped(conn, start, end, by, where=where, scope=scope),
        (start, end, by),
        where=where,
        scope=job_scope if scope is not None else None,
        unscoped=scope is None,
    )
    jobs = sum(ln.jobs for ln in lines)
    waited = sum((ln.avg_wait_min * ln.jobs for ln in lines), Decimal(0))
    total = Line(
        "total",
        jobs,
        sum((ln.gpu_card_hours for ln in lines), Decimal(0)),
        sum((ln.npu_card_hours for ln in lines), Decimal(0)),
        sum((ln.cpu_hours for ln in lines), Decimal(0)),
        sum((ln.mem_gib_hours for ln in lines), Decimal(0)),
        (waited / jobs).quantize(PLACES) if jobs else Decimal(0),
        sum((ln.kwh for ln in lines), Decimal(0)),
    )
    hours = Decimal(int((end - start).total_seconds()) // 3600)
    util = []
    if pools:
        used = {ln.key: ln for ln in _grouped(conn, start, end, Dim.POOL, where=where, scope=scope)}
        for pool, (gpus, npus) in sorted(pools.items()):
            ln = used.get(pool)
            gpu_h = ln.gpu_card_hours if ln else Decimal(0)
            npu_h = ln.npu_card_hours if ln else Decimal(0)
            avail = hours * (gpus + npus)
            ratio = ((gpu_h + npu_h) / avail).quantize(PLACES) if avail else Decimal(0)
            util.append(Utilisation(pool, gpus, npus, gpu_h, npu_h, ratio))
    users = (
        lines if by is Dim.USER else _grouped(conn, start, end, Dim.USER, where=where, scope=scope)
    )
    return Report(start, end, by, tuple(lines), total, tuple(util), tuple(users[:top]))
