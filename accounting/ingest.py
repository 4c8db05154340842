"""Importing metered jobs into the usage tables, idempotently and crash-safe.

Rows are keyed by cluster + job id + step. Each batch is one transaction that upserts the rows
and adds to the rollups the difference between a job's new and previously stored use, so
importing the same jobs again changes nothing, a running job's growing use is counted once,
and a crash mid-import loses nothing: the unfinished batch is rolled back and the next import
reads the same window again.

A long import (a backfill of months, a directory of saved ``sacct --json`` dumps) is a list of
readers, each reading and metering one slice; :func:`ingest_parallel` runs them in worker
processes while this one stores their usages in order, so parsing and storing overlap.
"""

from __future__ import annotations

import gc
import logging
import multiprocessing
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from functools import lru_cache, partial
from itertools import islice
from operator import attrgetter, mul
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, Table, bindparam, select
from sqlalchemy.dialects import postgresql, sqlite

from accounting.meter import Topology, Usage, epoch, meter
from accounting.models import IngestState, Rollup, UsageRecord
from accounting.retention import Retention
from accounting.rollup import HOUR, KEY, MEASURES, NUMBERS, Columns, key_of, numbers_of, split
from dbtypes import UTCDateTime
from slurm_plugins.client import SlurmClient, parse
from slurm_plugins.client.models import AcctJob

log = logging.getLogger("aipool.accounting.ingest")

USAGE: Table = UsageRecord.__table__  # type: ignore[assignment]
ROLLUP: Table = Rollup.__table__  # type: ignore[assignment]
STATE: Table = IngestState.__table__  # type: ignore[assignment]
_FIELDS = tuple(f.name for f in fields(Usage))
#: the stored columns of a usage row, in the order :func:`_ingest_batch` gives them
_ROW = (*_FIELDS, "gpu_ucs", "npu_ucs", "cpu_s", "mem_mib_s", "imported_at")
_fields_of = attrgetter(*_FIELDS)
#: where a usage's times (epoch seconds in :class:`Usage`, datetimes in the table) are
_TIMES = tuple(i for i, f in enumerate(_FIELDS) if isinstance(USAGE.c[f].type, UTCDateTime))
_ROLLUP_ROW = ("period", "start", *KEY, *MEASURES)
_COLUMNS = {USAGE.name: _ROW, ROLLUP.name: _ROLLUP_ROW}

#: reads and meters one slice of accounting records (runs in a worker process; picklable)
Reader = Callable[[], list[Usage]]


@dataclass(frozen=True, slots=True)
class IngestResult:
    seen: int
    written: int
    unchanged: int
    batches: int

    def __add__(self, other: IngestResult) -> IngestResult:
        return IngestResult(
            self.seen + other.seen,
            self.written + other.written,
            self.unchanged + other.unchanged,
            self.batches + other.batches,
        )


NOTHING = IngestResult(0, 0, 0, 0)


@contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection while a batch is parsed or stored.

    A batch allocates hundreds of thousands of small objects, none of them in a reference
    cycle (they are freed by reference counting as usual); the collector, triggered by the
    allocations alone, would scan them over and over and cost a third of an import.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _insert(conn: Connection, table: Table) -> Any:
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table)
    if conn.dialect.name == "sqlite":
        return sqlite.insert(table)
    raise ValueError(f"accounting needs SQLite or PostgreSQL, not {conn.dialect.name}")


@dataclass(frozen=True, slots=True)
class Metered:
    """Usages as columns, one per :class:`Usage` field in order.

    This is how a reader's work crosses to the storing process and how a batch is stored:
    columns of plain values pickle, slice and turn into parameter rows in C loops, without
    an object per job.
    """

    columns: tuple[Sequence[Any], ...]

    @classmethod
    def of(cls, usages: Sequence[Usage]) -> Metered:
        if not usages:
            return cls(tuple(() for _ in _FIELDS))
        return cls(tuple(zip(*map(_fields_of, usages), strict=True)))

    def __len__(self) -> int:
        return len(self.columns[0])

    def column(self, name: str) -> Sequence[Any]:
        return self.columns[_INDEX[name]]

    def usage(self, i: int) -> Usage:
        return Usage(*(c[i] for c in self.columns))

    def take(self, rows: Sequence[int]) -> Metered:
        return Metered(tuple([c[i] for i in rows] for c in self.columns))

    def batches(self, size: int) -> Iterator[Metered]:
        if len(self) <= size:
            yield self
            return
        for at in range(0, len(self), size):
            yield Metered(tuple(c[at : at + size] for c in self.columns))


_INDEX = {name: i for i, name in enumerate(_FIELDS)}


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
    it = iter(usages)
    return _ingest(
        engine, (Metered.of(b) for b in iter(lambda: list(islice(it, batch_size)), [])), on_batch
    )


def _ingest(
    engine: Engine, batches: Iterable[Metered], on_batch: Callable[[int], None] | None
) -> IngestResult:
    seen = written = count = 0
    for batch in batches:
        with paused_gc(), engine.begin() as conn:
            written += _ingest_batch(conn, batch)
            count += 1
            if on_batch is not None:
                on_batch(count)
        seen += len(batch)
    return IngestResult(seen, written, seen - written, count)


def _ingest_batch(conn: Connection, batch: Metered) -> int:
    col = batch.column
    keys = list(zip(col("cluster"), col("job_id"), col("step"), strict=True))
    last = dict(zip(keys, range(len(keys)), strict=True))
    if len(last) < len(keys):  # a job listed twice: its last record wins
        rows = sorted(last.values())
        batch, keys = batch.take(rows), [keys[i] for i in rows]
        col = batch.column
    old = _stored(conn, keys)
    taken_back: list[Usage] = []  # stored use that changed: to take back from the rollups
    if old:
        kept = []
        for i, key in enumerate(keys):
            before = old.get(key)
            if before is not None:
                if before == batch.usage(i):
                    continue
                taken_back.append(before)
            kept.append(i)
        if not kept:
            return 0
        if len(kept) < len(keys):
            batch = batch.take(kept)
            col = batch.column
    n = len(batch)
    elapsed = col("elapsed_s")
    ins = _insert(conn, USAGE)
    _bulk(
        conn,
        USAGE,
        ins.on_conflict_do_update(
            index_elements=["cluster", "job_id", "step"],
            set_={c: ins.excluded[c] for c in _ROW},
        ),
        [
            *batch.columns,
            list(map(mul, col("gpu_ucards"), elapsed)),
            list(map(mul, col("npu_ucards"), elapsed)),
            list(map(mul, col("cpus"), elapsed)),
            list(map(mul, col("mem_mib"), elapsed)),
            [epoch(datetime.now(UTC))] * n,
        ],
    )
    numbers = [col(name) if name != "sign" else [1] * n for name in NUMBERS]
    keys_of = list(zip(*(col(k) for k in KEY), strict=True))
    numbers_at = list(zip(*numbers, strict=True))
    for before in taken_back:
        keys_of.append(key_of(before))
        numbers_at.append(numbers_of(before, -1))
    _add_rollups(conn, split(keys_of, numbers_at))
    return n


def _bulk(conn: Connection, table: Table, stmt: Any, columns: Sequence[Sequence[Any]]) -> None:
    """One ``executemany`` of ``stmt`` with rows given as ``columns``, in the order of
    ``table``'s in :data:`_COLUMNS`; values are converted by the columns' own bind processors.

    This skips SQLAlchemy's per-row parameter building, the bulk of an import's cost: each
    distinct value of a converted column is converted once, and the columns are zipped into
    parameter rows, all in C loops.
    """
    if not columns or not columns[0]:
        return
    order = list(_COLUMNS[table.name])
    compiled = stmt.compile(dialect=conn.dialect, column_keys=order)
    names = list(compiled.positiontup or order)
    out: list[Iterable[Any]] = []
    for name in names:
        column = columns[order.index(name)]
        typ = table.c[name].type
        proc = typ.dialect_impl(conn.dialect).bind_processor(conn.dialect)
        if isinstance(typ, UTCDateTime):  # the rows give times as epoch seconds
            proc = _sqlite_text if conn.dialect.name == "sqlite" else partial(_from_epoch, proc)
        if proc is not None:
            converted = {v: proc(v) for v in set(column)}
            column = tuple(map(converted.__getitem__, column))
        out.append(column)
    params: list[Any] = list(zip(*out, strict=True))
    if not compiled.positional:
        params = [dict(zip(names, p, strict=True)) for p in params]
    conn.exec_driver_sql(compiled.string, params)


def _sqlite_text(value: int | None) -> str | None:
    """What SQLAlchemy stores for a :class:`UTCDateTime` on SQLite (its default text format,
    ``2026-11-02 10:00:00.000000``), for epoch seconds; the unit tests read every such column
    back through SQLAlchemy and compare."""
    if value is None:
        return None
    hour, second = divmod(value, HOUR)
    return _hour_text(hour) + _SECOND_TEXT[second]


@lru_cache(maxsize=1 << 16)
def _hour_text(hour: int) -> str:
    return datetime.fromtimestamp(hour * HOUR, UTC).strftime("%Y-%m-%d %H:")


_SECOND_TEXT = [f"{s // 60:02d}:{s % 60:02d}.000000" for s in range(HOUR)]


def _from_epoch(proc: Callable[[Any], Any] | None, value: int | None) -> Any:
    if value is None:
        return None
    at = datetime.fromtimestamp(value, UTC)
    return proc(at) if proc is not None else at


def _stored(conn: Connection, keys: Iterable[tuple[str, int, str]]) -> dict[Any, Usage]:
    by_cluster: dict[str, list[int]] = {}
    for cluster, job_id, _step in keys:
        by_cluster.setdefault(cluster, []).append(job_id)
    cols = [USAGE.c[name] for name in _FIELDS]
    out: dict[Any, Usage] = {}
    # one expanding parameter: SQLAlchemy would otherwise coerce each of a batch's ids
    q = select(*cols).where(
        USAGE.c.cluster == bindparam("cluster"),
        USAGE.c.job_id.in_(bindparam("ids", expanding=True)),
    )
    for cluster, ids in by_cluster.items():
        for r in conn.execute(q, {"cluster": cluster, "ids": ids}):
            values = list(r)
            for i in _TIMES:
                if values[i] is not None:
                    values[i] = epoch(values[i])
            u = Usage(*values)
            out[(u.cluster, u.job_id, u.step)] = u
    return out


def _add_rollups(conn: Connection, rows: Columns) -> None:
    if not rows[0]:
        return
    ins = _insert(conn, ROLLUP)
    stmt = ins.on_conflict_do_update(
        index_elements=["period", "start", *KEY],
        set_={m: ROLLUP.c[m] + ins.excluded[m] for m in MEASURES},
    )
    _bulk(conn, ROLLUP, stmt, rows)


# ---------------------------------------------------------------------- in parallel
def ingest_parallel(
    engine: Engine,
    readers: Iterable[Reader],
    *,
    workers: int = 0,
    batch_size: int = 5000,
    on_batch: Callable[[int], None] | None = None,
    on_stored: Callable[[int], None] | None = None,
) -> IngestResult:
    """Run ``readers`` in ``workers`` processes (0: in this one) and store what each returns,
    in the readers' order, in this process; ``on_batch`` is :func:`ingest`'s, and
    ``on_stored(i)`` runs once reader ``i``'s usages are committed.

    At most ``workers + 1`` slices are read ahead, so memory stays that of a few slices
    however long the import. A reader's failure stops the import after the slices before it.
    """
    if workers < 0:
        raise ValueError("workers must be 0 or more")
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    total = NOTHING
    store: dict[str, Any] = {
        "batch_size": batch_size,
        "on_batch": on_batch,
        "on_stored": on_stored,
    }
    if workers == 0:
        for i, reader in enumerate(readers):
            total += _store(engine, _read(reader), i=i, **store)
        return total
    context = multiprocessing.get_context("forkserver")  # no fork of this process's threads
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        pending: deque[Future[Metered]] = deque()
        todo = iter(readers)
        try:
            pending.extend(pool.submit(_read, r) for r in islice(todo, workers + 1))
            i = 0
            while pending:
                usages = pending.popleft().result()
                pending.extend(pool.submit(_read, r) for r in islice(todo, 1))
                total += _store(engine, usages, i=i, **store)
                i += 1
        finally:
            for f in pending:
                f.cancel()
    return total


def _read(reader: Reader) -> Metered:
    with paused_gc():
        return Metered.of(reader())


def _store(
    engine: Engine,
    usages: Metered,
    *,
    i: int,
    batch_size: int,
    on_batch: Callable[[int], None] | None,
    on_stored: Callable[[int], None] | None,
) -> IngestResult:
    done = _ingest(engine, usages.batches(batch_size), on_batch)
    if on_stored is not None:
        on_stored(i)
    return done


def metered(
    records: Iterable[AcctJob], topo: Topology, now: datetime | None = None, horizon: int = 0
) -> list[Usage]:
    """The usages of ``records`` that started, less those that ended before ``horizon``."""
    return [u for r in records if (u := meter(r, topo, now)) is not None and u.end_time >= horizon]


def read_file(
    path: Path, topo: Topology, now: datetime | None = None, horizon: int = 0
) -> list[Usage]:
    """A reader of a saved ``sacct --json`` document (an export from another cluster, or a
    backfill dump)."""
    return metered(parse.acct_jobs(path.read_bytes()), topo, now, horizon)


def ingest_files(
    engine: Engine,
    paths: Sequence[Path],
    topo: Topology,
    *,
    workers: int = 0,
    batch_size: int = 5000,
    retention: Retention | None = None,
    now: datetime | None = None,
) -> IngestResult:
    """Import saved ``sacct --json`` documents, in the given order."""
    now = now or datetime.now(UTC)
    horizon = epoch((retention or Retention()).horizon(now))
    readers = [partial(read_file, p, topo, None, horizon) for p in paths]
    return ingest_parallel(engine, readers, workers=workers, batch_size=batch_size)


# ---------------------------------------------------------------------- from Slurm
#: how far back each import starts before the previous one ended (jobs sacct had not yet
#: recorded when that import ran)
OVERLAP = timedelta(minutes=10)
FIRST_LOOKBACK = timedelta(days=2)


def _sacct_time(t: datetime) -> str:
    """sacct reads local wall-clock times."""
    return t.astimezone().replace(tzinfo=None).isoformat(timespec="seconds")


def read_window(
    client: SlurmClient,
    start: datetime,
    end: datetime,
    *,
    topo: Topology,
    now: datetime,
    horizon: int,
) -> list[Usage]:
    """A reader of one window of ``sacct`` (the client runs it, in the reader's process)."""
    records = client.accounting(start=_sacct_time(start), end=_sacct_time(end))
    return metered(records, topo, now, horizon)


def windows(
    start: datetime, end: datetime, size: timedelta | None
) -> list[tuple[datetime, datetime]]:
    """``[start, end)`` cut into consecutive windows of ``size`` (one window without it)."""
    if size is None or end - start <= size:
        return [(start, end)]
    if size <= timedelta(0):
        raise ValueError("a window must be longer than zero")
    out = []
    while start < end:
        out.append((start, min(start + size, end)))
        start += size
    return out


def import_from_slurm(
    engine: Engine,
    client: SlurmClient,
    *,
    now: datetime | None = None,
    since: datetime | None = None,
    batch_size: int = 5000,
    on_batch: Callable[[int], None] | None = None,
    retention: Retention | None = None,
    window: timedelta | None = None,
    workers: int = 0,
) -> IngestResult:
    """One import cycle: read ``sacct`` from the last import (less an overlap) to now.

    With ``window``, a long span (a first import, a backfill ``since`` months ago) is read
    one window at a time, ``workers`` windows at once in other processes, and where the
    import got to is saved after each window, so an interrupted backfill resumes there.

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
    horizon = epoch((retention or Retention()).horizon(now))
    spans = windows(start, now, window)

    readers = [
        partial(read_window, client, a, b, topo=topo, now=now, horizon=horizon) for a, b in spans
    ]
    result = ingest_parallel(
        engine,
        readers,
        workers=workers,
        batch_size=batch_size,
        on_batch=on_batch,
        on_stored=lambda i: _save_state(engine, cluster, spans[i][1], now),
    )
    log.info(
        "imported %d jobs from %s in %d window(s) (%d written, %d unchanged)",
        result.seen,
        cluster or "the default cluster",
        len(spans),
        result.written,
        result.unchanged,
    )
    return result


def _save_state(engine: Engine, cluster: str, until: datetime, now: datetime) -> None:
    with engine.begin() as conn:
        ins = _insert(conn, STATE)
        conn.execute(
            ins.on_conflict_do_update(
                index_elements=["cluster"],
                set_={"imported_until": ins.excluded.imported_until, "updated_at": now},
            ),
            {"cluster": cluster, "imported_until": until, "updated_at": now},
        )
