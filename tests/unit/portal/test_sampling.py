"""The capacity sampler: its pure plan (rows per partition and kind and per node, the queue and
its waits), the roll-up into hours and the retention, what apply writes, the control daemon's
pass (its own lock, a dry run writes nothing), and the series the charts read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from portal.control.daemon import SAMPLE_LOCK, Daemon
from portal.control.lock import held
from portal.extensions import db
from portal.nodes import sampling, series
from portal.nodes.models import CapacitySample
from portal.nodes.sampling import HOUR, Plan, Row, plan, roll_up, sample
from portal.slurm import ClusterRead
from slurm_plugins.client.models import Gres, Job, JobState, Node, NodeState, Tres
from tests.unit.portal.conftest import Env

NOW = datetime(2026, 12, 1, 12, 0, 30, tzinfo=UTC)
A100 = (Gres("gpu", "a100", 4), Gres("shard", "a100", 128))


def node(name: str, partitions: tuple[str, ...], **kw: Any) -> Node:
    return Node(name, NodeState.MIXED, cpus=16, real_memory=64000, partitions=partitions, **kw)


def job(job_id: int, partition: str, state: JobState, **kw: Any) -> Job:
    return Job(job_id, f"j{job_id}", "alice", "nlp", partition, "normal", state, **kw)


NODES = (
    node(
        "gpu1",
        ("gpu",),
        alloc_cpus=2,
        gres=A100,
        gres_used=(Gres("gpu", "a100", 1, "1"), Gres("shard", "a100", 1, "0")),
        tres_used=Tres({"gres/gpu": 1, "gres/gpu:a100": 1, "gres/shard": 8}),
    ),
    node("gpu2", ("gpu",), gres=A100),
    node(
        "npu1",
        ("npu",),
        gres=(Gres("npu", "910b", 2), Gres("npu", "910b_vir05", 4)),
        tres_used=Tres({"gres/npu:910b_vir05": 1}),
    ),
    node("cpu1", ("cpu",), alloc_cpus=4),
)
TEN_MIN_AGO, HALF_AN_HOUR_AGO = NOW - timedelta(minutes=10), NOW - timedelta(minutes=30)
JOBS = (
    job(1, "gpu", JobState.RUNNING, tres_req=Tres({"gres/gpu": 1})),
    job(2, "gpu", JobState.RUNNING, tres_req=Tres({"gres/shard": 8})),
    job(3, "gpu", JobState.PENDING, tres_req=Tres({"gres/gpu": 8}), submit_time=TEN_MIN_AGO),
    job(4, "gpu,cpu", JobState.PENDING, submit_time=HALF_AN_HOUR_AGO),
    job(5, "npu", JobState.RUNNING, tres_req=Tres({"gres/npu:910b_vir05": 1, "gres/npu": 1})),
    job(6, "cpu", JobState.COMPLETED),
)


def rows_by_key(rows: list[Row]) -> dict[tuple[str, str, str, str], Row]:
    return {r.key: r for r in rows}


def test_a_sample_has_a_row_per_partition_and_kind_and_per_node_of_cards() -> None:
    rows = rows_by_key(sample([ClusterRead("lab", NODES, JOBS)], NOW, 60))
    gpu = rows[("lab", "partition", "gpu", "gpu")]
    # 1 whole card + 8 shards = 1.25 of 8 cards; one job pending 10 min
    assert (gpu.total, gpu.used, gpu.free) == (8.0, 1.25, 6.75)
    assert (gpu.pending, gpu.running) == (1, 2)
    assert gpu.wait_mean_s == gpu.wait_max_s == 600.0
    # the CPU-only job waits in both partitions it names
    for part in ("gpu", "cpu"):
        cpu = rows[("lab", "partition", part, "cpu")]
        assert cpu.pending == 1
        assert cpu.wait_max_s == 1800.0
    npu = rows[("lab", "partition", "npu", "npu")]
    assert (npu.total, npu.used, npu.running) == (3.0, 0.25, 1)  # 2 chips + 4 quarters
    assert rows[("lab", "partition", "cpu", "cpu")].used == 4.0
    assert ("lab", "partition", "cpu", "gpu") not in rows  # nothing of that kind there
    assert rows[("lab", "node", "gpu1", "gpu")].used == 1.25
    assert rows[("lab", "node", "gpu2", "gpu")].used == 0.0
    assert ("lab", "node", "cpu1", "cpu") not in rows  # nodes: cards only
    assert {r.at for r in rows.values()} == {NOW}
    assert {r.step_s for r in rows.values()} == {60}


def test_a_cluster_that_does_not_answer_leaves_a_gap() -> None:
    rows = sample([ClusterRead("down", error="no controller"), ClusterRead("lab", NODES)], NOW, 60)
    assert {r.cluster for r in rows} == {"lab"}


def test_the_plan_says_how_far_rows_age() -> None:
    p = plan(
        [ClusterRead("lab", NODES, JOBS)],
        NOW,
        step_s=60,
        keep_minutes=timedelta(hours=48),
        keep_hours=timedelta(days=400),
    )
    assert p.rows
    assert p.roll_before == datetime(2026, 11, 29, 12, 0, tzinfo=UTC)  # a whole hour
    assert p.drop_before == NOW - timedelta(days=400)


def _row(at: datetime, used: float, wait_max: float = 0.0, pending: int = 0) -> Row:
    return Row(at, 60, "lab", "partition", "gpu", "gpu", 8.0, used, 8.0 - used, pending, 1,
               wait_max / 2, wait_max)  # fmt: skip


def test_minute_rows_roll_up_into_hourly_means_with_the_longest_wait_kept() -> None:
    hour = datetime(2026, 11, 29, 10, tzinfo=UTC)
    minutes = [
        _row(hour + timedelta(minutes=m), used=m % 4, wait_max=m, pending=2) for m in range(60)
    ]
    minutes.append(_row(hour + timedelta(hours=1), used=8))
    first, second = roll_up(minutes)
    assert (first.at, first.step_s) == (hour, HOUR)
    assert first.used == pytest.approx(1.5)
    assert first.free == pytest.approx(6.5)
    assert first.wait_max_s == 59
    assert first.pending == 2
    assert (second.at, second.used) == (hour + timedelta(hours=1), 8)


def _count(env: Env, **where: Any) -> int:
    with env.app.app_context():
        stmt = select(func.count()).select_from(CapacitySample)
        for k, v in where.items():
            stmt = stmt.where(getattr(CapacitySample, k) == v)
        return int(db.session.scalar(stmt) or 0)


def test_apply_writes_rolls_up_and_drops(env: Env) -> None:
    old_hour = datetime(2026, 11, 20, 3, tzinfo=UTC)
    ancient = Row(NOW - timedelta(days=500), HOUR, "lab", "partition", "gpu", "gpu", 8, 1, 7)
    aged = [_row(old_hour + timedelta(minutes=m), used=2) for m in range(30)]
    with env.app.app_context():
        sampling.apply(db.session, Plan(rows=(ancient, *aged)))
        assert _count(env) == 31
        p = plan(
            [ClusterRead("lab", NODES, JOBS)],
            NOW,
            step_s=60,
            keep_minutes=timedelta(hours=48),
            keep_hours=timedelta(days=400),
        )
        assert sampling.apply(db.session, p, dry_run=True).inserted == 0
        assert _count(env) == 31  # a dry run writes nothing
        done = sampling.apply(db.session, p)
    assert (done.inserted, done.rolled, done.hours, done.dropped) == (len(p.rows), 30, 1, 1)
    assert _count(env, step_s=HOUR) == 1  # the aged half hour, as one row; the ancient one gone
    assert _count(env, step_s=60) == len(p.rows)


def test_the_control_daemon_samples_on_its_own_lock(env: Env) -> None:
    daemon = Daemon(env.app, sample_every_s=60)
    with env.app.app_context(), held(db.engine, SAMPLE_LOCK):
        assert daemon.sample_pass() == []  # another sampler holds the lock: nothing written
    assert _count(env) == 0
    lines = daemon.sample_pass()
    assert lines
    assert lines[0].startswith("samples: ")
    assert _count(env) > 0
    before = _count(env)
    assert Daemon(env.app, dry_run=True).sample_pass()[0].startswith("would: ")
    assert _count(env) == before


def test_the_series_the_charts_read(env: Env) -> None:
    start = NOW.replace(minute=0, second=0)
    reads = [ClusterRead("lab", NODES, JOBS)]
    with env.app.app_context():
        for m in range(0, 30, 5):
            sampling.apply(
                db.session, Plan(rows=tuple(sample(reads, start + timedelta(minutes=m), 60)))
            )
        data = series.read(db.session, "1h", start + timedelta(minutes=30))
    assert data["step"] == 60
    assert len(data["t"]) == 60
    used = [v for v in data["pool"]["gpu"]["used"] if v is not None]
    assert used == [1.25] * 6
    assert [v for v in data["utilisation"]["gpu"] if v is not None] == [pytest.approx(15.62)] * 6
    assert [v for v in data["utilisation"]["npu"] if v is not None] == [pytest.approx(8.33)] * 6
    queue = data["partitions"]["gpu"]["gpu"]
    assert [v for v in queue["pending"] if v is not None] == [1.0] * 6
    assert [v for v in data["nodes"]["gpu1"]["gpu"] if v is not None] == [31.25] * 6
    summary = series.summary(data)
    assert summary.points == 6
    assert summary.kinds["gpu"] == (pytest.approx(15.62), pytest.approx(15.62))
    assert summary.partitions["gpu"][0] == 1.0
