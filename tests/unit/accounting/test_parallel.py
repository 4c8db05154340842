"""Long imports: saved sacct documents and windows of sacct read by worker processes while
this one stores; the same totals as an import done here, in order, resumable."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from functools import partial
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, create_engine, func, select

from accounting import migrate
from accounting.cli import accounting
from accounting.ingest import (
    import_from_slurm,
    ingest_files,
    ingest_parallel,
    read_file,
    windows,
)
from accounting.meter import NodeCards, Topology
from accounting.models import IngestState, Rollup, UsageRecord
from accounting.retention import Retention
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.runner import Completed, ReplayRunner

DATA = Path(__file__).parents[2] / "data" / "slurm"
TOPO = Topology(nodes={"gpu1": NodeCards("a100", 32), "gpu2": NodeCards("a100", 32)})
NOW = datetime(2026, 12, 1, tzinfo=UTC)  # the recorded jobs ran in November 2026
KEEP = Retention(keep_days=365, keep_hourly_days=365)


@pytest.fixture
def documents(tmp_path: Path) -> list[Path]:
    """The recorded 22.05 and 24.11 documents, and the 22.05 one again as other jobs."""
    older = json.loads((DATA / "22.05" / "sacct.json").read_text())
    for job in older["jobs"]:
        job["job_id"] += 100_000
    paths = []
    for name, text in (
        ("a.json", (DATA / "22.05" / "sacct.json").read_text()),
        ("b.json", (DATA / "24.11" / "sacct.json").read_text()),
        ("c.json", json.dumps(older)),
    ):
        path = tmp_path / name
        path.write_text(text)
        paths.append(path)
    return paths


def fresh(path: Path) -> Engine:
    engine = create_engine(f"sqlite:///{path}")
    migrate.upgrade(engine)
    return engine


def contents(engine: Engine) -> tuple[list[Any], list[Any]]:
    """Every usage row (less its import time) and every rollup row, in a stable order."""
    u, r = UsageRecord.__table__, Rollup.__table__
    with engine.connect() as conn:
        usage = conn.execute(
            select(*(c for c in u.c if c.name not in {"id", "imported_at"})).order_by(
                u.c.cluster, u.c.job_id
            )
        ).all()
        rollups = conn.execute(
            select(*(c for c in r.c if c.name != "id")).order_by(
                r.c.period, r.c.start, r.c.user, r.c.account, r.c.gpu_type, r.c.npu_type
            )
        ).all()
    return [tuple(x) for x in usage], [tuple(x) for x in rollups]


def test_workers_store_what_an_import_here_stores(
    documents: list[Path], tmp_path: Path, engine: Engine
) -> None:
    here = ingest_files(engine, documents, TOPO, now=NOW, retention=KEEP, batch_size=7)
    other = fresh(tmp_path / "workers.db")
    try:
        there = ingest_files(
            other, documents, TOPO, workers=2, now=NOW, retention=KEEP, batch_size=7
        )
        assert here == there
        assert here.written == 36  # the jobs that ran: 11, 14 and 11
        assert here.unchanged == 0
        assert contents(other) == contents(engine)
        again = ingest_files(other, documents, TOPO, workers=1, now=NOW, retention=KEEP)
        assert (again.seen, again.written) == (36, 0)
        assert contents(other) == contents(engine)
    finally:
        other.dispose()
    usage, rollups = contents(engine)
    assert len(usage) == 36
    assert {row[0] for row in usage} == {"aipool", "trixie"}
    assert {row[0] for row in rollups} == {"hour", "day", "month"}


@pytest.mark.parametrize("workers", [0, 1])
def test_a_failing_reader_stops_the_import_after_the_slices_before_it(
    documents: list[Path], engine: Engine, workers: int
) -> None:
    readers = [
        partial(read_file, documents[0], TOPO),
        partial(read_file, documents[0].with_name("missing.json"), TOPO),
        partial(read_file, documents[1], TOPO),
    ]
    stored: list[int] = []
    with pytest.raises(FileNotFoundError, match=r"missing\.json"):
        ingest_parallel(engine, readers, workers=workers, on_stored=stored.append)
    assert stored == [0]
    with engine.connect() as conn:
        clusters = conn.execute(select(UsageRecord.cluster).distinct()).scalars().all()
        jobs = conn.execute(select(func.sum(Rollup.jobs)).where(Rollup.period == "month"))
        assert clusters == ["aipool"]
        assert jobs.scalar() == 11


def test_bad_arguments_are_refused(engine: Engine) -> None:
    with pytest.raises(ValueError, match="workers"):
        ingest_parallel(engine, [], workers=-1)
    with pytest.raises(ValueError, match="batch_size"):
        ingest_parallel(engine, [], batch_size=0)
    with pytest.raises(ValueError, match="longer than zero"):
        windows(NOW - timedelta(days=2), NOW, timedelta(0))


def test_windows_cover_the_span_exactly() -> None:
    start = NOW - timedelta(days=2, hours=5)
    spans = windows(start, NOW, timedelta(days=1))
    assert spans[0][0] == start
    assert spans[-1][1] == NOW
    assert [b - a for a, b in spans] == [timedelta(days=1)] * 2 + [timedelta(hours=5)]
    assert all(a[1] == b[0] for a, b in pairwise(spans))
    assert windows(start, NOW, None) == [(start, NOW)]


def recorded(fail_on: int | None = None) -> tuple[SlurmClient, ReplayRunner]:
    calls = {"sacct": 0}

    def sacct(argv: Any, _input: str | None) -> Completed:
        calls["sacct"] += 1
        if calls["sacct"] == fail_on:
            return Completed(tuple(argv), 1, "", "sacct: error: Unable to contact slurmdbd")
        return Completed(tuple(argv), 0, (DATA / "22.05" / "sacct.json").read_text(), "")

    def ok(name: str) -> Completed:
        return Completed((), 0, (DATA / "22.05" / name).read_text(), "")

    runner = ReplayRunner(
        {
            ("sinfo", "--version"): ok("version.txt"),
            ("sinfo",): ok("sinfo.json"),
            ("sacct",): sacct,
            ("sacctmgr",): ok("sacctmgr_assoc.txt"),
        }
    )
    return SlurmClient(runner), runner  # type: ignore[arg-type]


def test_a_backfill_reads_window_by_window_and_resumes_after_a_failure(engine: Engine) -> None:
    since = NOW - timedelta(days=3)
    client, runner = recorded(fail_on=2)
    with pytest.raises(Exception, match="slurmdbd"):
        import_from_slurm(
            engine, client, now=NOW, since=since, window=timedelta(days=1), retention=KEEP
        )
    with engine.connect() as conn:
        until = conn.execute(select(IngestState.imported_until)).scalar()
    assert until == since + timedelta(days=1)  # the first window is saved, the rest is not

    client, runner = recorded()
    done = import_from_slurm(engine, client, now=NOW, window=timedelta(days=1), retention=KEEP)
    sacct = [argv for argv, _ in runner.calls if argv[0] == "sacct"]
    resumed = since + timedelta(days=1) - timedelta(minutes=10)  # less the usual overlap
    local = [(resumed + timedelta(days=k)).astimezone().replace(tzinfo=None) for k in range(3)]
    starts = [argv[argv.index("--starttime") + 1] for argv in sacct]
    assert starts == [t.isoformat(timespec="seconds") for t in local]
    assert done.written == 0  # the same recorded jobs: already stored by the first window
    with engine.connect() as conn:
        assert conn.execute(select(IngestState.imported_until)).scalar() == NOW


def test_cli_imports_saved_documents(documents: list[Path], engine: Engine) -> None:
    url = engine.url.render_as_string(hide_password=False)
    argv = ["ingest", "--db", url, "--no-topology", "--workers", "1", "--keep-days", "36500"]
    for path in documents:
        argv += ["--file", str(path)]
    res = CliRunner().invoke(accounting, argv)
    assert res.exit_code == 0, res.output
    assert res.output == "36 jobs read, 36 written, 0 unchanged\n"
    res = CliRunner().invoke(accounting, [*argv, "--since", "2026-11-01"])
    assert res.exit_code == 2
    assert "--since reads Slurm" in res.output
    res = CliRunner().invoke(accounting, ["ingest", "--db", url, "--file", "/nonexistent.json"])
    assert res.exit_code == 2
    assert "does not exist" in res.output
