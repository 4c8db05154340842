"""Accounting at scale: ingest 1,000,000 synthetic sacct rows (target < 60 s) and build a
monthly report over them (target < 2 s).

The rows are sacct ``--json`` documents of Slurm 22.05's shape (whole GPUs, shards, NPUs and
vNPUs, CPU jobs; 200 users in 20 projects of 4 domains over one month), written first as saved
``sacct --json`` files of 10,000 jobs each (untimed, as sacct would have produced them). The
timed ingest is ``accounting.ingest.ingest_files``, what ``aipool accounting ingest --file``
runs: reading and parsing the files with the client's parser, metering, and the idempotent
upsert with hour/day/month rollups into SQLite, with ``--workers`` processes reading ahead
while this one stores (default: one per core; ``--workers 0`` does it all here).

Baselines, measured in the same run on the same machine:

* ingest: a plain ``executemany`` INSERT of the same metered rows into a copy of the usage
  table (no parsing, no upsert, no rollups);
* report: the same monthly report computed by scanning the raw rows (GROUP BY over the
  month's jobs), what a report would cost without rollups.

After the import the benchmark checks that the monthly rollups add up to the raw rows.

    .venv/bin/python bench/accounting_ingest.py [--jobs 1000000] [--workers N] [--dir /tmp]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, MetaData, create_engine, func, select

from accounting import migrate
from accounting.ingest import IngestResult, ingest_files, read_file
from accounting.meter import NodeCards, Topology, Usage
from accounting.models import Rollup, UsageRecord
from accounting.report import Dim, build, parse_month
from accounting.retention import Retention

MONTH = "2026-11"
CHUNK = 10_000
#: the import's clock and retention: every generated job is inside the kept window
_NOW = datetime(2026, 12, 1, tzinfo=UTC)
_KEEP = Retention(keep_days=365, keep_hourly_days=365)
DOMAINS = ["research", "teaching", "industry", "medicine"]
PROJECTS = [f"p{i:02d}" for i in range(20)]
USERS = [f"u{i:03d}" for i in range(200)]
GPU_NODES = [f"gpu{i:02d}" for i in range(1, 33)]
NPU_NODES = [f"npu{i:02d}" for i in range(1, 9)]
KINDS = ["shard", "gpu", "npu", "vnpu", "cpu"]
WEIGHTS = [40, 30, 10, 5, 15]


def topology() -> Topology:
    nodes = {n: NodeCards("a100" if i % 2 else "h100") for i, n in enumerate(GPU_NODES)}
    return Topology(nodes, {p: DOMAINS[i % len(DOMAINS)] for i, p in enumerate(PROJECTS)})


def _tres(kind: str, rng: random.Random, node: str) -> list[dict[str, Any]]:
    cpu = rng.choice([1, 2, 4, 8, 16])
    out = [
        {"type": "cpu", "name": None, "id": 1, "count": cpu},
        {"type": "mem", "name": None, "id": 2, "count": cpu * 4000},
        {"type": "node", "name": None, "id": 4, "count": 1},
    ]
    if kind == "gpu":
        n = rng.choice([1, 1, 2, 4, 8])
        model = "a100" if int(node[3:]) % 2 == 0 else "h100"
        out += [
            {"type": "gres", "name": "gpu", "id": 1001, "count": n},
            {"type": "gres", "name": f"gpu:{model}", "id": 1002, "count": n},
        ]
    elif kind == "shard":
        out.append({"type": "gres", "name": "shard", "id": 1003, "count": rng.randint(1, 31)})
    elif kind == "npu":
        n = rng.choice([1, 2, 4, 8])
        out += [
            {"type": "gres", "name": "npu", "id": 1004, "count": n},
            {"type": "gres", "name": "npu:910b", "id": 1005, "count": n},
        ]
    elif kind == "vnpu":
        out += [
            {"type": "gres", "name": "npu", "id": 1004, "count": 1},
            {"type": "gres", "name": "npu:910b_vir05", "id": 1006, "count": 1},
        ]
    return out


def sacct_chunks(jobs: int, seed: int = 7) -> Iterator[str]:
    """sacct --json output, ``CHUNK`` jobs per document."""
    rng = random.Random(seed)  # noqa: S311 (benchmark data, not secrets)
    t0 = int(parse_month(MONTH)[0].timestamp())
    span = 29 * 86400
    for first in range(1, jobs + 1, CHUNK):
        docs = []
        for job_id in range(first, min(first + CHUNK, jobs + 1)):
            kind = rng.choices(KINDS, WEIGHTS)[0]
            node = rng.choice(NPU_NODES if "npu" in kind else GPU_NODES)
            # sacct lists jobs by id, so by submission time: spread over the month in order
            submit = t0 + span * (job_id - 1) // jobs + rng.randrange(60)
            start = submit + int(rng.expovariate(1 / 300))
            elapsed = min(int(rng.expovariate(1 / 3600)) + 1, 86400)
            p = rng.randrange(len(PROJECTS))
            docs.append(
                {
                    "job_id": job_id,
                    "cluster": "bench",
                    "name": f"j{job_id}",
                    "user": USERS[(p * 10 + rng.randrange(10)) % len(USERS)],
                    "account": PROJECTS[p],
                    "partition": "npu" if "npu" in kind else ("cpu" if kind == "cpu" else "gpu"),
                    "qos": "normal",
                    "state": {"current": "COMPLETED", "reason": "None"},
                    "time": {
                        "elapsed": elapsed,
                        "submission": submit,
                        "start": start,
                        "end": start + elapsed,
                    },
                    "tres": {"allocated": _tres(kind, rng, node), "requested": []},
                    "nodes": node,
                    "exit_code": {"status": "SUCCESS", "return_code": 0},
                    "steps": [],
                }
            )
        yield json.dumps({"meta": {}, "errors": [], "jobs": docs})


def write_documents(directory: Path, jobs: int) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, text in enumerate(sacct_chunks(jobs)):
        path = directory / f"sacct-{i:04d}.json"
        path.write_text(text)
        paths.append(path)
    return paths


def fresh(path: Path) -> Engine:
    path.unlink(missing_ok=True)
    engine = create_engine(f"sqlite:///{path}")
    migrate.upgrade(engine)
    return engine


def run_ingest(engine: Engine, paths: list[Path], workers: int) -> tuple[float, IngestResult]:
    t = time.perf_counter()
    done = ingest_files(
        engine, paths, topology(), workers=workers, batch_size=CHUNK, now=_NOW, retention=_KEEP
    )
    return time.perf_counter() - t, done


def run_baseline(path: Path, paths: list[Path]) -> float:
    """Plain executemany of the same (already metered, untimed) rows into a bare copy of the
    table."""
    path.unlink(missing_ok=True)
    engine = create_engine(f"sqlite:///{path}")
    meta = MetaData()
    table = UsageRecord.__table__.to_metadata(meta)  # type: ignore[attr-defined]
    meta.create_all(engine)
    topo = topology()
    spent = 0.0
    now = datetime.now(UTC)
    for doc in paths:
        usages: list[Usage] = read_file(doc, topo)
        rows = [_plain_row(u, now) for u in usages]
        t = time.perf_counter()
        with engine.begin() as conn:
            conn.execute(table.insert(), rows)
        spent += time.perf_counter() - t
    engine.dispose()
    return spent


def _plain_row(u: Usage, now: datetime) -> dict[str, Any]:
    """A usage row as an ORM user would give it: the table's own types (datetimes)."""
    row: dict[str, Any] = asdict(u)
    for name in ("submit_time", "start_time", "end_time"):
        if row[name] is not None:
            row[name] = datetime.fromtimestamp(row[name], UTC)
    row.update(
        gpu_ucs=u.gpu_ucs, npu_ucs=u.npu_ucs, cpu_s=u.cpu_s, mem_mib_s=u.mem_mib_s, imported_at=now
    )
    return row


def check_totals(engine: Engine) -> tuple[int, int]:
    """The monthly rollups' job count and GPU use against the raw rows' (must be equal)."""
    with engine.connect() as conn:
        raw = conn.execute(select(func.count(), func.sum(UsageRecord.gpu_ucs))).one()
        rolled = conn.execute(
            select(func.sum(Rollup.jobs), func.sum(Rollup.gpu_ucs)).where(Rollup.period == "month")
        ).one()
    if tuple(raw) != tuple(rolled):
        raise SystemExit(f"rollups do not add up: raw rows {tuple(raw)}, rollups {tuple(rolled)}")
    return int(raw[0]), int(raw[1])


def report_times(engine: Engine, runs: int) -> tuple[float, float, int]:
    start, end = parse_month(MONTH)
    best = scan = float("inf")
    lines = 0
    for _ in range(runs):
        with engine.connect() as conn:
            t = time.perf_counter()
            rep = build(conn, start, end, Dim.PROJECT, pools={"gpu": (128, 0), "npu": (0, 64)})
            best = min(best, time.perf_counter() - t)
            lines = len(rep.lines)
            t = time.perf_counter()
            u = UsageRecord
            conn.execute(
                select(
                    u.account,
                    func.count(),
                    func.sum(u.gpu_ucs),
                    func.sum(u.npu_ucs),
                    func.sum(u.cpu_s),
                    func.sum(u.mem_mib_s),
                    func.sum(u.wait_s),
                )
                .where(u.start_time >= start, u.start_time < end)
                .group_by(u.account)
            ).all()
            scan = min(scan, time.perf_counter() - t)
    return best, scan, lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--dir", type=Path, default=None, help="where the files go")
    ap.add_argument("--runs", type=int, default=3, help="report runs (best is kept)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        base = Path(tmp)
        t = time.perf_counter()
        paths = write_documents(base / "sacct", args.jobs)
        print(f"wrote {len(paths)} sacct --json files in {time.perf_counter() - t:.0f} s (untimed)")
        baseline = run_baseline(base / "baseline.db", paths)
        engine = fresh(base / "acct.db")
        spent, done = run_ingest(engine, paths, args.workers)
        load = os.getloadavg()[0]
        again, redone = run_ingest(engine, paths[: max(100_000 // CHUNK, 1)], args.workers)
        rows, gpu_ucs = check_totals(engine)
        report, scan, lines = report_times(engine, args.runs)
        engine.dispose()
    print(f"sacct rows: {args.jobs:,} (written {done.written:,} in {done.batches} batches)")
    print(
        f"ingest (read + parse + meter + idempotent upsert + hour/day/month rollups, "
        f"{args.workers} reader process(es)): {spent:.1f} s ({args.jobs / spent:,.0f} rows/s; "
        f"target < 60 s) {'OK' if spent < 60 else 'OVER TARGET'}"
    )
    print(
        f"baseline plain executemany INSERT of the same rows (no parsing, no rollups): "
        f"{baseline:.1f} s -> ingest / baseline = {spent / baseline:.2f}x"
    )
    print(
        f"re-import of the first {redone.seen:,} rows: {again:.1f} s, {redone.written} rows changed"
    )
    print(f"rollups add up: {rows:,} jobs, {gpu_ucs / 3.6e9:,.1f} GPU card-hours in both")
    print(f"cpu load while measuring (1-min load average): {load:.1f}")
    print(
        f"monthly report by project ({lines} lines, from rollups): {report * 1000:.0f} ms "
        f"(target < 2 s) {'OK' if report < 2 else 'OVER TARGET'}"
    )
    print(
        f"baseline GROUP BY over the raw rows: {scan * 1000:.0f} ms "
        f"-> report / baseline = {report / scan:.3f}x"
    )


if __name__ == "__main__":
    main()
