"""Usage over time: buckets in the reader's time zone (a Shanghai day is not a UTC day), the
largest groups and the rest, filters and scope as reports take them, and the jobs behind it."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Engine

from accounting.ingest import ingest
from accounting.meter import NodeCards, Topology, meter
from accounting.models import Rollup, UsageRecord
from accounting.report import Dim, ReportError
from accounting.timeline import Step, buckets, jobs, series, step_for
from tests.unit.accounting.builders import acct, d

SHANGHAI = ZoneInfo("Asia/Shanghai")
TOPO = Topology(nodes={"gpu1": NodeCards("a100", 32)}, domains={"nlp": "research"})
D = Decimal


@pytest.fixture
def used(engine: Engine) -> Engine:
    late = d(2026, 11, 3, 20)  # 04:00 on 4 November in Shanghai
    jobs_ = [
        acct(1, "cpu=1,gres/gpu=2,gres/gpu:a100=2", hours=3, start=late, user="alice"),
        acct(2, "cpu=1,gres/shard=16", hours=2, start=late, user="sam"),
        acct(3, "cpu=1,gres/gpu=1,gres/gpu:a100=1", hours=1, start=d(2026, 11, 5, 2), user="bob"),
        acct(4, "cpu=1,gres/gpu=1,gres/gpu:a100=1", hours=1, start=late, user="carol", account="x"),
    ]
    ingest(engine, [u for j in jobs_ if (u := meter(j, TOPO)) is not None])
    return engine


def test_days_are_the_readers_days(used: Engine) -> None:
    start, end = d(2026, 11, 2, 16), d(2026, 11, 9, 16)  # Monday to Monday in Shanghai
    with used.connect() as c:
        s = series(c, start, end, by=Dim.USER, zone=SHANGHAI)
    assert s.step is Step.DAY
    assert [t.day for t in s.starts] == [3, 4, 5, 6, 7, 8, 9]
    assert s.keys == ("alice", "bob", "carol", "sam")  # most card-hours first, then by name
    assert s.values[0] == (D(0), D(6), *[D(0)] * 5)  # alice's 6 card-hours on the 4th
    assert s.totals[1] == D(8)  # 6 + 1 + 1 on the 4th, Shanghai time
    assert s.totals[2] == D(1)  # bob, 10:00 on the 5th
    with used.connect() as c:
        utc = series(c, start, end, by=None, zone=UTC)
    assert utc.keys == ("",)
    assert utc.totals[0] == D(0)  # 2 Nov 16:00 UTC onwards
    assert sum(utc.totals) == D(9)  # the same use, however it is cut


def test_the_largest_groups_and_the_rest(used: Engine) -> None:
    with used.connect() as c:
        s = series(c, d(2026, 11, 1), d(2026, 12, 1), by=Dim.USER, zone=UTC, top=2)
    assert s.keys == ("alice", "bob")
    assert s.other is not None
    assert sum(s.other) == D(2)  # carol's 1 and sam's 1
    assert not s.empty


def test_filters_scope_and_steps(used: Engine) -> None:
    with used.connect() as c:
        hours = series(
            c,
            d(2026, 11, 3, 18),
            d(2026, 11, 4),
            by=Dim.USER,
            zone=UTC,
            where={Dim.PROJECT: ["nlp"]},
        )
        scoped = series(
            c, d(2026, 11, 1), d(2026, 12, 1), by=Dim.USER, zone=UTC, scope=Rollup.user == "bob"
        )
        months = series(c, d(2026, 1, 1), d(2026, 12, 31), zone=SHANGHAI, step=Step.MONTH)
    assert hours.step is Step.HOUR
    assert "carol" not in hours.keys  # project x
    assert hours.values[hours.keys.index("alice")][2] == D(2)  # 20:00-21:00, two GPUs
    assert scoped.keys == ("bob",)
    assert len(months.starts) == 12
    assert months.totals[10] == D(9)  # November, from the daily rollups
    assert step_for(d(2026, 11, 1), d(2026, 11, 2)) is Step.HOUR
    assert step_for(d(2026, 1, 1), d(2026, 12, 1)) is Step.MONTH
    with pytest.raises(ReportError):
        series(c, d(2026, 11, 2), d(2026, 11, 1), zone=UTC)


def test_a_month_of_buckets_across_a_summer_time_change() -> None:
    paris = ZoneInfo("Europe/Paris")  # 25 October 2026: 25 hours long
    days = buckets(d(2026, 10, 24, 22), d(2026, 10, 27, 23), Step.DAY, paris)
    assert [(t.day, t.hour) for t in days] == [(25, 0), (26, 0), (27, 0)]


def test_the_jobs_that_ran_in_a_period(used: Engine) -> None:
    with used.connect() as c:
        found = jobs(c, d(2026, 11, 4), d(2026, 11, 6), where={Dim.PROJECT: ["nlp"]})
        mine = jobs(c, d(2026, 11, 1), d(2026, 12, 1), scope=UsageRecord.user == "sam")
        none = jobs(c, d(2026, 11, 10), d(2026, 11, 11))
    assert [j.job_id for j in found] == [3]  # bob's, on the 5th; 1 and 2 ended on the 3rd
    assert [(j.job_id, j.gpu_card_hours, j.gpu_model) for j in mine] == [(2, D(1), "a100")]
    assert mine[0].start == datetime(2026, 11, 3, 20, tzinfo=UTC)
    assert none == []
