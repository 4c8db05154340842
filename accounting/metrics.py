"""Accounting's metrics: how far the import is behind Slurm, what it imported, and the
card-hours each tenant used this month.

Served by the accounting scheduler (``aipool accounting run --metrics HOST:PORT``), the one
long-running accounting process. The import lag and the month's card use are read from the
database at scrape time (``acct_ingest_state`` and the month rollups: one small grouped
query each), so they are right even while an import runs; what the imports did is counted
in the scheduler. ``tenant`` is the Slurm account (the project) the use is billed to; card
use is in card-seconds, the base unit (divide by 3600 for card-hours).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from sqlalchemy import Engine, func, select

from accounting.ingest import IngestResult
from accounting.meter import UCARDS, card_kind
from accounting.models import IngestState, Rollup
from accounting.report import month_start
from plumbing.metrics import SnapshotCollector, name, registry_of

log = logging.getLogger("aipool.accounting")

IMPORT_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0)
#: the model label of use on cards Slurm did not type
UNTYPED = "untyped"


def lag_family(engine: Engine, now: datetime, default_cluster: str) -> Metric:
    """Seconds between now and where the last complete import of each cluster got to."""
    lag = GaugeMetricFamily(
        name("accounting", "import_lag_seconds"),
        "How far the imported usage is behind now: now less where the last import got to.",
        labels=["cluster"],
    )
    with engine.connect() as conn:
        rows = conn.execute(select(IngestState.cluster, IngestState.imported_until)).all()
    for cluster, until in rows:
        behind = (now - until.replace(tzinfo=until.tzinfo or UTC)).total_seconds()
        lag.add_metric([cluster or default_cluster], max(0.0, behind))
    return lag


def usage_family(engine: Engine, now: datetime, default_cluster: str) -> Metric:
    """Card-seconds of the current month (UTC) per cluster, tenant, kind and model."""
    used = GaugeMetricFamily(
        name("accounting", "month_card_seconds"),
        "Card-seconds used this month (UTC) by the tenant's jobs, shards and vNPUs as their "
        "share of a card; divide by 3600 for card-hours.",
        labels=["cluster", "tenant", "kind", "model"],
    )
    query = (
        select(
            Rollup.cluster,
            Rollup.account,
            Rollup.gpu_type,
            Rollup.npu_type,
            func.sum(Rollup.gpu_ucs),
            func.sum(Rollup.npu_ucs),
        )
        .where(Rollup.period == "month", Rollup.start == month_start(now))
        .group_by(Rollup.cluster, Rollup.account, Rollup.gpu_type, Rollup.npu_type)
    )
    sums: dict[tuple[str, str, str, str], int] = {}
    with engine.connect() as conn:
        for cluster, account, gpu_type, npu_type, gpu, npu in conn.execute(query):
            for resource, model, ucs in (("gpu", gpu_type, gpu), ("npu", npu_type, npu)):
                if ucs:
                    kind = card_kind(resource, model or "")
                    key = (cluster or default_cluster, account, kind, model or UNTYPED)
                    sums[key] = sums.get(key, 0) + int(ucs)
    for key, ucs in sorted(sums.items()):
        used.add_metric(list(key), ucs / UCARDS)
    return used


class AccountingMetrics:
    """The scheduler's registry: the database's figures at scrape time, and counters of
    the imports it ran (``imported()`` / ``failed()``)."""

    def __init__(
        self,
        engine: Engine,
        cluster: str = "default",
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.engine = engine
        self.cluster = cluster
        self.clock = clock
        self.registry: CollectorRegistry = registry_of([SnapshotCollector(self._database)])
        reg = self.registry
        self.imports = Counter(
            name("accounting", "imports"),
            "Import cycles by outcome (ok, failed).",
            ["outcome"],
            registry=reg,
        )
        self.rows = Counter(
            name("accounting", "imported_rows"),
            "Jobs and steps read from sacct by what the import did with them (written: new "
            "or changed; unchanged: already stored as they are).",
            ["outcome"],
            registry=reg,
        )
        self.seconds = Histogram(
            name("accounting", "import_seconds"),
            "Time of one import cycle.",
            buckets=IMPORT_BUCKETS,
            registry=reg,
        )

    def _database(self) -> Iterable[Metric]:
        now = self.clock()
        return [
            lag_family(self.engine, now, self.cluster),
            usage_family(self.engine, now, self.cluster),
        ]

    def measure(self, run: Callable[[], IngestResult]) -> IngestResult:
        """Run one import and count it; a failure is counted and raised on."""
        t0 = time.monotonic()
        try:
            result = run()
        except Exception:
            self.failed()
            raise
        self.imported(result, time.monotonic() - t0)
        return result

    def imported(self, result: IngestResult, seconds: float) -> None:
        self.imports.labels("ok").inc()
        self.rows.labels("written").inc(result.written)
        self.rows.labels("unchanged").inc(result.unchanged)
        self.seconds.observe(seconds)

    def failed(self) -> None:
        self.imports.labels("failed").inc()
