"""Accounting on the lab: whole-GPU, shard, NPU and vNPU jobs of known length are imported and
metered exactly; a second import changes nothing; an import killed mid-way (SIGKILL inside a
transaction) and run again gives the same totals."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, func, select

from accounting import migrate
from accounting.ingest import import_from_slurm
from accounting.meter import UCARDS
from accounting.models import UsageRecord
from accounting.report import Dim, build
from aipool.lab.cluster import Lab
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.models import JobState
from tests.integration.conftest import wait_until

pytestmark = pytest.mark.slurm

SLEEP_S = 3
#: user, project (Slurm account), partition, --gres, (kind, type, cards)
JOBS = [
    ("alice", "nlp", "gpu", "gpu:a100:2", ("gpu", "a100", Fraction(2))),
    ("bob", "vision", "gpu", "shard:8", ("gpu", "a100", Fraction(8, 32))),
    ("carol", "cs101", "npu", "npu:910b:1", ("npu", "910b", Fraction(1))),
    ("dave", "cs101", "npu", "npu:910b_vir05:2", ("npu", "910b", Fraction(2, 4))),
]


def _engine(path: Path) -> Engine:
    engine = create_engine(f"sqlite:///{path}")
    migrate.upgrade(engine)
    return engine


def _by_user(engine: Engine, start: datetime, end: datetime) -> dict[str, tuple[object, ...]]:
    with engine.connect() as conn:
        rep = build(conn, start, end, Dim.USER)
    return {
        ln.key: (ln.jobs, ln.gpu_card_hours, ln.npu_card_hours, ln.cpu_hours) for ln in rep.lines
    }


def _rows(engine: Engine) -> dict[int, UsageRecord]:
    with engine.connect() as conn:
        return {r.job_id: r for r in conn.execute(select(UsageRecord))}  # type: ignore[misc]


def test_jobs_of_known_length_are_metered_exactly(
    client: SlurmClient, lab: Lab, tmp_path: Path
) -> None:
    t0 = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=5)
    script = f"#!/bin/bash\nsleep {SLEEP_S}\n"
    ids = {}
    for user, account, partition, gres, want in JOBS:
        opts = [
            f"--chdir={lab.cfg.jobs}",
            "--output=/dev/null",
            "--time=2",
            f"--account={account}",
            "-p",
            partition,
            f"--gres={gres}",
        ]
        ids[client.submit(script, opts, as_user=user)] = (user, account, want)

    def finished() -> bool:
        recs = client.accounting(job_ids=ids)
        return len(recs) == len(ids) and all(r.state is JobState.COMPLETED for r in recs)

    wait_until(finished, 90, interval=1)
    sacct = {r.job_id: r for r in client.accounting(job_ids=ids)}

    # --- one clean import, then the same import again
    engine = _engine(tmp_path / "a.db")
    first = import_from_slurm(engine, client, since=t0)
    assert first.written >= len(ids)
    before = _rows(engine)
    again = import_from_slurm(engine, client, since=t0)
    rows = _rows(engine)
    rewritten = {
        j for j, r in rows.items() if j not in before or r.imported_at != before[j].imported_at
    }
    # the second import rewrote nothing it had seen finished (only jobs of other tests that
    # were still running may have grown): here that is every job of this test
    assert again.written == len(rewritten)
    assert not {j for j in rewritten if j in before and before[j].finished}
    assert not rewritten & set(ids)
    # and once more as a backfill reads: one-minute windows of sacct, each read and metered
    # by a worker process (the real client, pickled), stored here; this test's jobs again
    # change nothing
    backfill = import_from_slurm(engine, client, since=t0, window=timedelta(minutes=1), workers=1)
    assert backfill.seen >= len(ids)
    after = _rows(engine)
    assert all(after[j].imported_at == rows[j].imported_at for j in ids)
    for job_id, (user, account, (kind, typ, cards)) in ids.items():
        row, rec = rows[job_id], sacct[job_id]
        assert SLEEP_S <= rec.elapsed_s <= SLEEP_S + 3
        assert (row.user, row.account, row.elapsed_s) == (user, account, rec.elapsed_s)
        assert row.domain == ("research" if account in ("nlp", "vision") else "teaching")
        ucs = getattr(row, f"{kind}_ucs")
        assert getattr(row, f"{kind}_type") == typ
        assert Fraction(ucs, UCARDS) == cards * rec.elapsed_s, (user, kind)
        other = "npu" if kind == "gpu" else "gpu"
        assert getattr(row, f"{other}_ucs") == 0

    start = t0.replace(minute=0, second=0)
    end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    totals = _by_user(engine, start, end)
    for user in ("alice", "bob", "carol", "dave"):
        mine = [j for j, (u, _, _) in ids.items() if u == user]
        others = [r for j, r in rows.items() if r.user == user and j not in ids]
        gpu = sum((Fraction(rows[j].gpu_ucs) for j in mine), Fraction(0)) + sum(
            Fraction(r.gpu_ucs) for r in others
        )
        npu = sum((Fraction(rows[j].npu_ucs) for j in mine), Fraction(0)) + sum(
            Fraction(r.npu_ucs) for r in others
        )
        jobs, gpu_h, npu_h, _cpu = totals[user]
        assert jobs == len(mine) + len(others)
        assert Fraction(gpu_h) == round(gpu / (UCARDS * 3600), 4)  # type: ignore[arg-type]
        assert Fraction(npu_h) == round(npu / (UCARDS * 3600), 4)  # type: ignore[arg-type]

    # --- an import killed (SIGKILL) inside its second batch, then run again
    killed_db = tmp_path / "b.db"
    _engine(killed_db).dispose()
    code = textwrap.dedent(
        f"""
        import os, signal
        from datetime import datetime
        from sqlalchemy import create_engine
        from accounting.ingest import import_from_slurm
        from slurm_plugins.client import SlurmClient

        def die(n):
            if n == 2:
                os.kill(os.getpid(), signal.SIGKILL)

        import_from_slurm(
            create_engine({f"sqlite:///{killed_db}"!r}),
            SlurmClient(env={dict(lab.cfg.env())!r}),
            since=datetime.fromisoformat({t0.isoformat()!r}),
            batch_size=1,
            on_batch=die,
        )
        """
    )
    root = Path(__file__).parents[2]
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, timeout=60, env={**os.environ}, check=False
    )
    assert done.returncode == -9
    killed = create_engine(f"sqlite:///{killed_db}")
    with killed.connect() as conn:
        assert conn.execute(select(func.count()).select_from(UsageRecord)).scalar() == 1
    import_from_slurm(killed, client, since=t0)
    users = {u for u, *_ in JOBS}
    steady = {u for u in users if all(r.finished for r in rows.values() if r.user == u)}
    assert steady  # users with a job of another test still running are left out
    again_totals = _by_user(killed, start, end)
    assert {u: again_totals[u] for u in steady} == {u: totals[u] for u in steady}
