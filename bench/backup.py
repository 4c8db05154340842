"""Backup and restore time for a portal database with 1,000,000 usage rows.

A SQLite database with the portal's accounting tables (accounting's migrations) is filled
with N metered jobs in ``acct_usage`` (default 1,000,000; the rollups are left empty, so the
file is the usage table and its indexes). Then, each ``--runs`` times:

- ``backup create`` of that database alone (no slurmdbd, no configuration, no stores), and
  ``backup verify`` of the archive;
- ``backup restore`` of the archive onto an empty site.

Baselines, measured in the same run: SQLite's backup API alone into a file (what create's
database step does before it archives and hashes), and a plain file copy of that copy into
place (the least a restore must do). Prints medians and the ratios.

    .venv/bin/python bench/backup.py [--rows 1000000] [--runs 3]
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from sqlalchemy import create_engine

from accounting import migrate
from aipool.backup import archive, create, restore
from aipool.backup.dump import sqlite_backup
from aipool.backup.site import Site

CHUNK = 50_000
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _rows(n: int, rng: random.Random) -> Iterator[tuple[object, ...]]:
    for i in range(n):
        start = T0 + dt.timedelta(seconds=rng.randrange(0, 180 * 86400))
        elapsed = rng.randrange(60, 86400)
        cards = rng.choice((0, 4, 8, 32, 64, 128))  # k/32 of a card, as the meter stores it
        yield (
            "pool", i + 1, "", f"user{i % 5000}", f"proj{i % 500}", f"dom{i % 20}",
            rng.choice(("gpu", "npu", "cpu")), "normal", "COMPLETED",
            (start - dt.timedelta(seconds=30)).isoformat(sep=" "),
            start.isoformat(sep=" "), (start + dt.timedelta(seconds=elapsed)).isoformat(sep=" "),
            elapsed, 30, "a100", cards, cards * elapsed, "", 0, 0, 8, 8 * elapsed,
            16384, 16384 * elapsed, 1, T0.isoformat(sep=" "),
        )  # fmt: skip


def build(path: Path, rows: int) -> None:
    engine = create_engine(f"sqlite:///{path}")
    migrate.upgrade(engine)
    engine.dispose()
    con = sqlite3.connect(path)
    columns = (
        "cluster, job_id, step, user, account, domain, partition, qos, state, submit_time, "
        "start_time, end_time, elapsed_s, wait_s, gpu_type, gpu_ucards, gpu_ucs, npu_type, "
        "npu_ucards, npu_ucs, cpus, cpu_s, mem_mib, mem_mib_s, finished, imported_at"
    )
    marks = ", ".join("?" * 26)
    rng = random.Random(42)  # noqa: S311 - synthetic data, not secrets
    it = _rows(rows, rng)
    while batch := [r for _, r in zip(range(CHUNK), it, strict=False)]:
        con.executemany(f"INSERT INTO acct_usage ({columns}) VALUES ({marks})", batch)  # noqa: S608
    con.commit()
    con.close()


def timed(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def site(root: Path) -> Site:
    return Site(
        cluster="pool",
        database_url=f"sqlite:///{root / 'portal.db'}",
        slurmdbd_conf=None,
        config_dirs=(),
        stores=(),
    )


def one_run(src: Path, work: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    shutil.rmtree(work, ignore_errors=True)
    (work / "backups").mkdir(parents=True)
    (work / "target").mkdir()
    out["baseline: sqlite backup API"] = timed(
        lambda: sqlite_backup(src / "portal.db", work / "copy.db")
    )
    made: list[Path] = []

    def do_create() -> None:
        path, _ = create.create(
            site(src), work / "backups", include_files=False, now=dt.datetime.now(dt.UTC),
            aipool_version="bench", slurm_version="bench",
        )  # fmt: skip
        made.append(path)

    out["backup create"] = timed(do_create)
    out["backup verify"] = timed(lambda: archive.verify(made[0]))
    out["baseline: copy into place"] = timed(
        lambda: shutil.copyfile(work / "copy.db", work / "target" / "copied.db")
    )
    out["backup restore"] = timed(
        lambda: restore.restore(made[0], site(work / "target"), restore.Options())
    )
    out["archive MB"] = made[0].stat().st_size / 1e6
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="aipool-bench-backup-") as tmp:
        src = Path(tmp) / "source"
        src.mkdir()
        t = timed(lambda: build(src / "portal.db", args.rows))
        size = (src / "portal.db").stat().st_size / 1e6
        print(f"database: {args.rows:,} usage rows, {size:.0f} MB (built in {t:.1f} s)")
        runs = [one_run(src, Path(tmp) / "work") for _ in range(args.runs)]
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    for key, value in med.items():
        unit = "" if key.endswith("MB") else " s"
        print(f"  {key:<30} {value:8.2f}{unit}")
    base_c, base_r = med["baseline: sqlite backup API"], med["baseline: copy into place"]
    print(f"create / backup API:   {med['backup create'] / base_c:6.1f}x")
    print(f"verify / backup API:   {med['backup verify'] / base_c:6.1f}x")
    print(f"restore / plain copy:  {med['backup restore'] / base_r:6.1f}x")
    print(f"archive / database:    {med['archive MB'] / size:6.2f}")


if __name__ == "__main__":
    main()
