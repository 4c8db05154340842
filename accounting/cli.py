"""``aipool accounting``: import from sacct, reports, retention and the scheduler.

The database is the portal's (``--db`` or ``AIPOOL_DATABASE_URL``), migrated by the portal's
Alembic history (``aipool portal`` applies it); these commands need no Flask app.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from slurm_plugins.client import SlurmClient

log = logging.getLogger("aipool.accounting")


def _engine(url: str | None) -> Engine:
    from sqlalchemy import create_engine, inspect

    if not url:
        raise click.UsageError("no database: pass --db or set AIPOOL_DATABASE_URL")
    try:
        engine = create_engine(url)
        if not inspect(engine).has_table("acct_usage"):
            raise click.ClickException(
                f"{engine.url.render_as_string()} has no accounting tables: migrate it first "
                "(`aipool portal` applies the migrations)"
            )
    except ValueError as exc:  # bad URL
        raise click.UsageError(f"database URL not understood: {exc}") from exc
    return engine


def _client(lab: bool) -> SlurmClient:
    from slurm_plugins.client import SlurmClient

    if lab:
        from aipool.lab.cluster import Lab

        return SlurmClient(env=Lab().cfg.env(), timeout=120)
    env = json.loads(os.environ.get("AIPOOL_SLURM_ENV", "{}"))
    return SlurmClient(env={**os.environ, **env} if env else None, timeout=120)


def _when(value: str | None, what: str) -> datetime | None:
    if value is None:
        return None
    try:
        t = datetime.fromisoformat(value)
    except ValueError as exc:
        raise click.BadParameter(f"{value!r} is not an ISO date/time", param_hint=what) from exc
    return t if t.tzinfo else t.replace(tzinfo=UTC)


_db = click.option("--db", envvar="AIPOOL_DATABASE_URL", help="database URL (the portal's)")
_lab = click.option("--lab", is_flag=True, help="read Slurm of the lab cluster (aipool lab up)")


@click.group("accounting")
def accounting() -> None:
    """Card-hour accounting: import from sacct, reports, retention."""


@accounting.command()
@_db
@_lab
@click.option("--since", help="read sacct from this ISO time instead of the last import")
@click.option("--batch-size", default=5000, show_default=True, type=click.IntRange(1, 100_000))
@click.option("--keep-days", default=180, show_default=True, type=click.IntRange(1, 36500))
def ingest(db: str | None, lab: bool, since: str | None, batch_size: int, keep_days: int) -> None:
    """One import of finished and running jobs from sacct (idempotent)."""
    from accounting.ingest import import_from_slurm
    from accounting.retention import Retention

    res = import_from_slurm(
        _engine(db),
        _client(lab),
        since=_when(since, "--since"),
        batch_size=batch_size,
        retention=Retention(keep_days, max(keep_days, 400)),
    )
    click.echo(f"{res.seen} jobs read, {res.written} written, {res.unchanged} unchanged")


@accounting.command()
@_db
@click.option("--keep-days", default=180, show_default=True, type=click.IntRange(1, 36500))
@click.option("--keep-hourly-days", default=400, show_default=True, type=click.IntRange(1, 36500))
def purge(db: str | None, keep_days: int, keep_hourly_days: int) -> None:
    """Delete raw job rows and hourly rollups past their retention."""
    from accounting.retention import Retention
    from accounting.retention import purge as run_purge

    try:
        retention = Retention(keep_days, keep_hourly_days)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    done = run_purge(_engine(db), datetime.now(UTC), retention)
    click.echo(f"purged {done.usage_rows} job rows, {done.hourly_rollups} hourly rollups")


@accounting.command()
@_db
@_lab
@click.option("--month", help="a calendar month, YYYY-MM (UTC)")
@click.option("--from", "start", help="ISO start (whole hour, UTC unless a zone is given)")
@click.option("--to", "end", help="ISO end, exclusive")
@click.option(
    "--by",
    type=click.Choice(["domain", "project", "user", "gpu_type", "npu_type", "pool", "cluster"]),
    default="project",
    show_default=True,
)
@click.option("--domain", multiple=True, help="only these domains (repeatable)")
@click.option("--project", multiple=True, help="only these projects (repeatable)")
@click.option("--format", "fmt", type=click.Choice(["csv", "xlsx", "pdf", "json"]), default="csv")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--capacity", help="cards per pool as JSON, e.g. '{\"gpu\": [8, 0]}'")
def report(
    *,
    db: str | None,
    lab: bool,
    month: str | None,
    start: str | None,
    end: str | None,
    by: str,
    domain: tuple[str, ...],
    project: tuple[str, ...],
    fmt: str,
    output: Path | None,
    capacity: str | None,
) -> None:
    """Usage over a period by domain, project, user, GPU type or pool; CSV, XLSX, PDF, JSON.

    Pool utilisation needs the cards per pool: from the lab (--lab) or --capacity.
    """
    from accounting import export
    from accounting.report import Dim, ReportError, build, parse_month
    from accounting.report import capacity as pool_capacity

    try:
        if month and (start or end):
            raise ReportError("give either --month or --from/--to")
        if month:
            t0, t1 = parse_month(month)
        else:
            a, b = _when(start, "--from"), _when(end, "--to")
            if a is None or b is None:
                raise ReportError("give --month, or both --from and --to")
            t0, t1 = a, b
        pools = _pools(capacity) if capacity else None
        if lab and pools is None:
            pools = pool_capacity(_client(True).nodes())
        where = {d: v for d, v in ((Dim.DOMAIN, domain), (Dim.PROJECT, project)) if v}
        with _engine(db).connect() as conn:
            rep = build(conn, t0, t1, Dim(by), where=where, pools=pools)
    except ReportError as exc:
        raise click.UsageError(str(exc)) from exc
    data = _json(rep) if fmt == "json" else export.render(rep, fmt)
    if output:
        output.write_bytes(data)
        click.echo(f"wrote {output} ({len(data)} bytes)", err=True)
    elif fmt in ("csv", "json"):
        click.echo(data.decode(), nl=False)
    else:
        raise click.UsageError(f"--format {fmt} needs --output FILE")


def _pools(text: str) -> dict[str, tuple[int, int]]:
    from accounting.report import ReportError

    try:
        raw = json.loads(text)
        return {str(k): (int(v[0]), int(v[1])) for k, v in raw.items()}
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        raise ReportError(f'--capacity must look like {{"gpu": [8, 0]}}: {exc}') from exc


def _json(rep: Any) -> bytes:
    from dataclasses import asdict

    from accounting.export import decimal_or_str

    def conv(obj: Any) -> Any:
        if isinstance(obj, dict):
            return {k: conv(v) for k, v in obj.items()}
        if isinstance(obj, list | tuple):
            return [conv(v) for v in obj]
        if isinstance(obj, datetime):
            return obj.isoformat()
        return decimal_or_str(obj)

    return (json.dumps(conv(asdict(rep)), indent=2) + "\n").encode()


@accounting.command()
@_db
@_lab
@click.option("--every-minutes", default=15, show_default=True, type=click.IntRange(1, 1440))
@click.option("--keep-days", default=180, show_default=True, type=click.IntRange(1, 36500))
def run(db: str | None, lab: bool, every_minutes: int, keep_days: int) -> None:
    """The accounting scheduler: import every N minutes, purge daily (APScheduler)."""
    from apscheduler.schedulers.blocking import BlockingScheduler

    from accounting.ingest import import_from_slurm
    from accounting.retention import Retention
    from accounting.retention import purge as run_purge

    engine, client = _engine(db), _client(lab)
    retention = Retention(keep_days, max(keep_days, 400))
    sched = BlockingScheduler(timezone="UTC")
    sched.add_job(
        lambda: import_from_slurm(engine, client, retention=retention),
        "interval",
        minutes=every_minutes,
        next_run_time=datetime.now(UTC),
        max_instances=1,
        coalesce=True,
        id="ingest",
    )
    sched.add_job(
        lambda: run_purge(engine, datetime.now(UTC), retention),
        "cron",
        hour=3,
        id="purge",
    )
    click.echo(f"importing every {every_minutes} min; Ctrl-C stops", err=True)
    try:
        sched.start()
    except (KeyboardInterrupt, SystemExit):
        sys.exit(0)
