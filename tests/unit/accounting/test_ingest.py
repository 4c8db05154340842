"""Ingestion: idempotent, running jobs counted once as they grow, crash-safe, rollups split."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine, func, select

from accounting.ingest import ingest
from accounting.meter import UCARDS, NodeCards, Topology, Usage, meter
from accounting.models import Rollup, UsageRecord
from accounting.rollup import hours
from slurm_plugins.client.models import JobState
from tests.unit.accounting.builders import T0, acct

TOPO = Topology(nodes={"gpu1": NodeCards("a100", 32)}, domains={"nlp": "research"})


def usages(*jobs: object) -> list[Usage]:
    out = [meter(j, TOPO) for j in jobs]  # type: ignore[arg-type]
    return [u for u in out if u is not None]


def totals(engine: Engine, period: str) -> tuple[int, int, int]:
    with engine.connect() as c:
        row = c.execute(
            select(func.sum(Rollup.gpu_ucs), func.sum(Rollup.cpu_s), func.sum(Rollup.jobs)).where(
                Rollup.period == period
            )
        ).one()
    return tuple(int(x or 0) for x in row)  # type: ignore[return-value]


def sample() -> list[Usage]:
    return usages(
        acct(1, "cpu=2,gres/gpu=2,gres/gpu:a100=2", hours=2),
        acct(2, "cpu=1,gres/shard=8", hours=2),
        acct(3, "cpu=4,gres/npu=1,gres/npu:910b=1", hours=1.5, nodes="npu1", partition="npu"),
    )


def test_hours_split_a_run_at_hour_boundaries() -> None:
    start = int(T0.timestamp())  # 10:30
    assert [s for _, s in hours(start, 7200)] == [1800, 3600, 1800]
    assert list(hours(start, 0)) == []


def test_import_twice_counts_once(engine: Engine) -> None:
    first = ingest(engine, sample())
    again = ingest(engine, sample())
    assert (first.written, again.written, again.unchanged) == (3, 0, 3)
    expected_gpu = 2 * 2 * 3600 * UCARDS + UCARDS // 4 * 7200
    for period in ("hour", "day", "month"):
        assert totals(engine, period) == (expected_gpu, (2 * 2 + 2 + 6) * 3600, 3)
    with engine.connect() as c:
        assert c.execute(select(func.count()).select_from(UsageRecord)).scalar() == 3


def test_a_running_job_is_counted_once_as_it_grows(engine: Engine) -> None:
    running = acct(9, "cpu=1,gres/gpu=1,gres/gpu:a100=1", hours=1, state=JobState.RUNNING)
    ingest(engine, usages(running))
    assert totals(engine, "day")[0] == 3600 * UCARDS
    done = acct(9, "cpu=1,gres/gpu=1,gres/gpu:a100=1", hours=3)
    ingest(engine, usages(done))
    ingest(engine, usages(done))
    assert totals(engine, "hour") == (3 * 3600 * UCARDS, 3 * 3600, 1)
    assert totals(engine, "month") == (3 * 3600 * UCARDS, 3 * 3600, 1)


def test_a_job_moved_between_keys_leaves_nothing_behind(engine: Engine) -> None:
    ingest(engine, usages(acct(5, "cpu=1", account="nlp", state=JobState.RUNNING)))
    ingest(engine, usages(acct(5, "cpu=1", account="vision")))
    with engine.connect() as c:
        by_account = dict(
            c.execute(
                select(Rollup.account, func.sum(Rollup.cpu_s))
                .where(Rollup.period == "month")
                .group_by(Rollup.account)
            ).all()
        )
    assert by_account == {"nlp": 0, "vision": 3600}


class Crash(Exception):
    pass


def test_a_crash_mid_import_loses_nothing(engine: Engine) -> None:
    def crash_at_second(n: int) -> None:
        if n == 2:
            raise Crash

    with pytest.raises(Crash):
        ingest(engine, sample(), batch_size=1, on_batch=crash_at_second)
    with engine.connect() as c:
        assert c.execute(select(func.count()).select_from(UsageRecord)).scalar() == 1
    ingest(engine, sample(), batch_size=1)
    clean = ingest(engine, sample())
    assert clean.written == 0
    assert totals(engine, "month")[2] == 3


def test_rollups_split_over_days_and_months(engine: Engine) -> None:
    late = datetime(2026, 11, 30, 23, 0, tzinfo=UTC)
    ingest(engine, usages(acct(1, "cpu=1", start=late, hours=2)))
    with engine.connect() as c:
        months = c.execute(
            select(Rollup.start, Rollup.cpu_s, Rollup.jobs)
            .where(Rollup.period == "month")
            .order_by(Rollup.start)
        ).all()
        days = c.execute(select(Rollup.start).where(Rollup.period == "day")).all()
    assert [(m.start, m.cpu_s, m.jobs) for m in months] == [
        (datetime(2026, 11, 1, tzinfo=UTC), 3600, 1),
        (datetime(2026, 12, 1, tzinfo=UTC), 3600, 0),
    ]
    assert len(days) == 2
    assert late + timedelta(hours=1) == datetime(2026, 12, 1, tzinfo=UTC)


def test_batch_size_is_validated(engine: Engine) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        ingest(engine, sample(), batch_size=0)
