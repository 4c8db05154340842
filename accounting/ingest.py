"""Importing metered jobs into the usage tables, idempotently and crash-safe.

Rows are keyed by cluster + job id + step. Each batch is one transaction that upserts the rows
and adds to the rollups the difference between a job's new and previously stored use, so
importing the same jobs again changes nothing, a running job's growing use is counted once,
and a crash mid-import loses nothing: the unfinished batch is rolled back and the next import
reads the same window again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from itertools import islice
from operator import attrgetter, itemgetter
from typing import Any

from sqlalchemy import Connection, Engine, Table, select
from sqlalchemy.dialects import postgresql, sqlite

from accounting.meter import Topology, Usage, meter
from accounting.models import IngestState, Rollup, UsageRecord
from accounting.retention import Retention
from accounting.rollup import KEY, MEASURES, Sums, add, with_coarser
from portal.models import UTCDateTime
from slurm_plugins.client import SlurmClient

log = logging.getLogger("aipool.accounting.ingest")

USAGE: Table = UsageRecord.__table__  # type: ignore[assignment]
ROLLUP: Table = Rollup.__table__  # type: ignore[assignment]
STATE: Table = IngestState.__table__  # type: ignore[assignment]
_FIELDS = tuple(f.name for f in fields(Usage))
#: the stored columns of a usage row, in the order :func:`_row` gives them
_ROW = (*_FIELDS, "gpu_ucs", "npu_ucs", "cpu_s", "mem_mib_s", "imported_at")
_fields_of = attrgetter(*_FIELDS)
_ROLLUP_ROW = ("period", "start", *KEY, *MEASURES)
_COLUMNS = {USAGE.name: _ROW, ROLLUP.name: _ROLLUP_ROW}


@dataclass(frozen=True, slots=True)
class IngestResult:
    seen: int
    written: int
    unchanged: int
    batches: int


def _insert(conn: Connection, table: Table) -> Any:
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table)
    if conn.dialect.name == "sqlite":
        return sqlite.insert(table)
    raise ValueError(f"accounting needs SQLite or PostgreSQL, not {conn.dialect.name}")


def _chunks(items: Iterable[Usage], size: int) -> Iterator[list[Usage]]:
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


def ingest(
    engine: Engine,
    usages: Iterable[Usage],
    *,
    batch_size: int = 5000,
    on_batch: Callable[[int], None] | None = None,
) -> IngestResult:
    """Store ``usages``; ``on_batch(n)`` runs inside each batch's transaction, before commit."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    seen = written = batches = 0
    for batch in _chunks(usages, batch_size):
        with engine.begin() as conn:
            written += _ingest_batch(conn, batch)
            batches += 1
            if on_batch is not None:
                on_batch(batches)
        seen += len(batch)
    return IngestResult(seen, written, seen - written, batches)


def _ingest_batch(conn: Connection, batch: Sequence[Usage]) -> int:
    latest = {(u.cluster, u.job_id, u.step): u for u in batch}
    old = _stored(conn, latest)
    sums: Sums = {}
    changed = []
    for key, new in latest.items():
        before = old.get(key)
        if before == new:
            continue
        if before is not None:
            add(sums, before, -1)
        add(sums, new)
        changed.append(new)
    if not changed:
        return 0
    now = datetime.now(UTC)
    ins = _insert(conn, USAGE)
    _bulk(
        conn,
        USAGE,
        ins.on_conflict_do_update(
            index_elements=["cluster", "job_id", "step"],
            set_={c: ins.excluded[c] for c in _ROW},
        ),
        [_row(u, now) for u in changed],
    )
    _add_rollups(conn, with_coarser(sums))
    return len(changed)


def _bulk(conn: Connection, table: Table, stmt: Any, rows: list[tuple[Any, ...]]) -> None:
    """One ``executemany`` of ``stmt`` with ``rows`` given in the order of ``table``'s columns
    in :data:`_COLUMNS`; values are converted by the columns' own bind processors.

    This skips SQLAlchemy's per-row parameter building, the bulk of an import's cost; a value
    repeated in a column (the import time, an hour's start) is converted once.
    """
    order = list(_COLUMNS[table.name])
    compiled = stmt.compile(dialect=conn.dialect, column_keys=order)
    names = list(compiled.positiontup or order)
    pick = itemgetter(*(order.index(n) for n in names))
    procs: list[tuple[int, Callable[[Any], Any], dict[Any, Any]]] = []
    for j, name in enumerate(names):
        typ = table.c[name].type
        proc = typ.dialect_impl(conn.dialect).bind_processor(conn.dialect)
        if isinstance(typ, UTCDateTime) and conn.dialect.name == "sqlite":
            proc = _sqlite_utc
        if proc is not None:
            procs.append((j, proc, {}))
    params: list[Any] = []
    for r in rows:
        row = list(pick(r))
        for j, proc, memo in procs:
            v = row[j]
            out = memo.get(v, memo)
            if out is memo:
                out = memo[v] = proc(v)
            row[j] = out
        params.append(tuple(row) if compiled.positional else dict(zip(names, row, strict=True)))
    conn.exec_driver_sql(compiled.string, params)


def _sqlite_utc(value: datetime | None) -> str | None:
    """What SQLAlchemy stores for a :class:`UTCDateTime` on SQLite (its default text format,
    ``2026-11-02 10:00:00.000000``), made by ``isoformat`` in C; the unit tests read every
    such column back through SQLAlchemy and compare."""
    if value is None:
        return None
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(" ", "microseconds")


def _row(u: Usage, now: datetime) -> tuple[Any, ...]:
    """A usage row in the order of :data:`_ROW`."""
    return (
        *_fields_of(u),
        u.gpu_ucs,
        u.npu_ucs,
        u.cpu_s,
        u.mem_mib_s,
        now,
    )


def _stored(conn: Connection, keys: Iterable[tuple[str, int, str]]) -> dict[Any, Usage]:
    by_cluster: dict[str, list[int]] = {}
    for cluster, job_id, _step in keys:
        by_cluster.setdefault(cluster, []).append(job_id)
    cols = [USAGE.c[name] for name in _FIELDS]
    out: dict[Any, Usage] = {}
    for cluster, ids in by_cluster.items():
        q = select(*cols).where(USAGE.c.cluster == cluster, USAGE.c.job_id.in_(ids))
        for r in conn.execute(q):
            u = Usage(*r)
            out[(u.cluster, u.job_id, u.step)] = u
    return out


def _add_rollups(conn: Connection, sums: Sums) -> None:
    if not sums:
        return
    starts: dict[int, datetime] = {}
    rows = []
    for k, v in sums.items():
        at = starts.get(k[1])
        if at is None:
            at = starts[k[1]] = datetime.fromtimestamp(k[1], UTC)
        rows.append((k[0], at, *k[2:], *v))
    ins = _insert(conn, ROLLUP)
    stmt = ins.on_conflict_do_update(
        index_elements=["period", "start", *KEY],
        set_={m: ROLLUP.c[m] + ins.excluded[m] for m in MEASURES},
    )
    _bulk(conn, ROLLUP, stmt, rows)


# ---------------------------------------------------------------------- from Slurm
#: how far back each import starts before the previous one ended (jobs sacct had not yet
#: recorded when that import ran)
OVERLAP = timedelta(minutes=10)
FIRST_LOOKBACK = timedelta(days=2)


def _sacct_time(t: datetime) -> str:
    """sacct reads local wall-clock times."""
    return t.astimezone().replace(tzinfo=None).isoformat(timespec="seconds")


def import_from_slurm(
    engine: Engine,
    client: SlurmClient,
    *,
    now: datetime | None = None,
    since: datetime | None = None,
    batch_size: int = 5000,
    on_batch: Callable[[int], None] | None = None,
    retention: Retention | None = None,
) -> IngestResult:
    """One import cycle: read ``sacct`` from the last import (less an overlap) to now.

    Jobs that ended before the retention horizon are skipped: their rows may have been purged
    already, and importing them again would count them twice in the rollups.
    """
    now = now or datetime.now(UTC)
    topo = Topology.from_slurm(client.nodes(), client.associations())
    cluster = client.cluster or ""
    with engine.connect() as conn:
        state = conn.execute(
            select(IngestState.imported_until).where(IngestState.cluster == cluster)
        ).scalar()
    start = since or (state - OVERLAP if state else now - FIRST_LOOKBACK)
    records = client.accounting(start=_sacct_time(start), end=_sacct_time(now))
    horizon = (retention or Retention()).horizon(now)
    usages = [
        u for r in records if (u := meter(r, topo, now)) is not None and u.end_time >= horizon
    ]
    result = ingest(engine, usages, batch_size=batch_size, on_batch=on_batch)
    with engine.begin() as conn:
        ins = _insert(conn, STATE)
        conn.execute(
            ins.on_conflict_do_update(
                index_elements=["cluster"],
                set_={"imported_until": ins.excluded.imported_until, "updated_at": now},
            ),
            {"cluster": cluster, "imported_until": now, "updated_at": now},
        )
    log.info(
        "imported %d jobs from %s (%d written, %d unchanged)",
        result.seen,
        cluster or "the default cluster",
        result.written,
        result.unchanged,
    )
    return result
