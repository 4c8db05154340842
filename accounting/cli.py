"""``aipool accounting``: import from sacct, reports, retention, the scheduler and migrations.

The database is the portal's or one of accounting's own (``--db`` or ``AIPOOL_DATABASE_URL``),
its accounting tables migrated by accounting's own history (``aipool accounting db upgrade``;
the portal migrates them when it starts). These commands need neither the portal nor Flask:
they run as a cron job or a service on their own. What they take from where they run (the
database, Slurm, the lab's settings) comes in through :mod:`accounting.edge`.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from accounting.edge import db_option as _db
from accounting.edge import lab_option as _lab
from accounting.edge import open_engine as _engine
from accounting.edge import slurm_client as _client

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from accounting.alerts import AlertConfig
    from accounting.meter import Topology
    from slurm_plugins.client import SlurmClient

log = logging.getLogger("aipool.accounting")


def _when(value: str | None, what: str) -> datetime | None:
    if value is None:
        return None
    try:
        t = datetime.fromisoformat(value)
    except ValueError as exc:
        raise click.BadParameter(f"{value!r} is not an ISO date/time", param_hint=what) from exc
    return t if t.tzinfo else t.replace(tzinfo=UTC)


@click.group("accounting")
def accounting() -> None:
    """Card-hour accounting: import from sacct, reports, retention."""


@accounting.command()
@_db
@_lab
@click.option("--since", help="read sacct from this ISO time instead of the last import")
@click.option("--batch-size", default=5000, show_default=True, type=click.IntRange(1, 100_000))
@click.option("--keep-days", default=180, show_default=True, type=click.IntRange(1, 36500))
@click.option(
    "--window-hours",
    default=24,
    show_default=True,
    type=click.IntRange(1, 24 * 366),
    help="read a long span (a first import, a backfill) one window of sacct at a time",
)
@click.option(
    "--workers",
    default=0,
    show_default=True,
    type=click.IntRange(0, 64),
    help="processes that read and meter windows (or files) while this one stores",
)
@click.option(
    "--file",
    "files",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="import a saved `sacct --json` document instead of asking Slurm (repeatable)",
)
@click.option(
    "--no-topology",
    is_flag=True,
    help="with --file: meter without asking Slurm for node cards and the account tree",
)
def ingest(  # noqa: PLR0917 (one parameter per option)
    db: str | None,
    lab: bool,
    since: str | None,
    batch_size: int,
    keep_days: int,
    window_hours: int,
    workers: int,
    files: tuple[Path, ...],
    no_topology: bool,
) -> None:
    """Import finished and running jobs from sacct (idempotent; re-running changes nothing)."""
    from accounting.ingest import import_from_slurm, ingest_files
    from accounting.meter import Topology
    from accounting.retention import Retention

    engine, client = _engine(db), _client(lab)
    retention = Retention(keep_days, max(keep_days, 400))
    if files:
        if since:
            raise click.UsageError("--since reads Slurm; it cannot be used with --file")
        res = ingest_files(
            engine,
            files,
            Topology() if no_topology else _topology(client),
            workers=workers,
            batch_size=batch_size,
            retention=retention,
        )
    else:
        res = import_from_slurm(
            engine,
            client,
            since=_when(since, "--since"),
            batch_size=batch_size,
            retention=retention,
            window=timedelta(hours=window_hours),
            workers=workers,
        )
    click.echo(f"{res.seen} jobs read, {res.written} written, {res.unchanged} unchanged")


def _topology(client: SlurmClient) -> Topology:
    """The cluster's node cards and account tree, for metering saved documents; without a
    cluster that answers, GPU models come from the jobs' own TRES and domains are accounts."""
    from accounting.meter import Topology
    from slurm_plugins.client import SlurmError

    try:
        return Topology.from_slurm(client.nodes(), client.associations())
    except SlurmError as exc:
        click.echo(
            f"warning: Slurm did not answer ({exc}); metering without its topology", err=True
        )
        return Topology()


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


def _alert_config(path: Path) -> AlertConfig:
    from accounting.alerts import AlertConfigError, load_config_file

    try:
        return load_config_file(path)
    except AlertConfigError as exc:
        raise click.UsageError(str(exc)) from exc


def alert_cycle(
    engine: Engine,
    client: SlurmClient,
    cfg: AlertConfig,
    *,
    dry_run: bool = False,
    now: datetime | None = None,
) -> list[str]:
    """One alert check: quotas from the rollups, pools from Slurm's nodes and queue."""
    from collections import Counter

    from accounting.alerts import pool_conditions, process, quota_conditions
    from slurm_plugins.common.mail import Mailer

    now = now or datetime.now(UTC)
    with engine.connect() as conn:
        holding = quota_conditions(conn, cfg, now)
    pending = Counter(j.partition for j in client.jobs() if j.is_pending)
    holding += pool_conditions(client.nodes(), cfg, pending)
    if dry_run:
        return [f"{c.kind} {c.subject} -> {', '.join(c.recipients)}" for c in holding]
    sent = process(engine, Mailer(cfg.smtp), holding, now)
    return [f"sent: {m.subject} -> {', '.join(m.to)}" for m in sent]


@accounting.command()
@_db
@_lab
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="alert configuration (YAML): smtp, recipients, budgets",
)
@click.option("--dry-run", is_flag=True, help="print what holds; send and record nothing")
def alerts(db: str | None, lab: bool, config_path: Path, dry_run: bool) -> None:
    """One quota and pool check; mails go out once per episode."""
    from slurm_plugins.common.mail import MailError

    try:
        lines = alert_cycle(_engine(db), _client(lab), _alert_config(config_path), dry_run=dry_run)
    except MailError as exc:
        raise click.ClickException(str(exc)) from exc
    for line in lines:
        click.echo(line)


@accounting.command()
@_db
@_lab
@click.option("--every-minutes", default=15, show_default=True, type=click.IntRange(1, 1440))
@click.option("--keep-days", default=180, show_default=True, type=click.IntRange(1, 36500))
@click.option(
    "--alerts",
    "alerts_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="also check alerts after each import, and mail the monthly report on the 1st",
)
def run(
    db: str | None, lab: bool, every_minutes: int, keep_days: int, alerts_path: Path | None
) -> None:
    """The accounting scheduler: import every N minutes, purge daily (APScheduler)."""
    from apscheduler.schedulers.blocking import BlockingScheduler

    from accounting.ingest import import_from_slurm
    from accounting.retention import Retention
    from accounting.retention import purge as run_purge

    engine, client = _engine(db), _client(lab)
    retention = Retention(keep_days, max(keep_days, 400))
    cfg = _alert_config(alerts_path) if alerts_path else None

    def cycle() -> None:
        import_from_slurm(engine, client, retention=retention)
        if cfg is not None:
            for line in alert_cycle(engine, client, cfg):
                log.info("%s", line)

    sched = BlockingScheduler(timezone="UTC")
    sched.add_job(
        cycle,
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
    if cfg is not None and cfg.report_recipients:
        sched.add_job(lambda: mail_monthly_report(engine, cfg), "cron", day=1, hour=5, id="report")
    click.echo(f"importing every {every_minutes} min; Ctrl-C stops", err=True)
    try:
        sched.start()
    except (KeyboardInterrupt, SystemExit):
        sys.exit(0)


def mail_monthly_report(engine: Engine, cfg: AlertConfig, now: datetime | None = None) -> None:
    """Mail last month's report as PDF to ``monthly_report.recipients``."""
    from datetime import timedelta

    from accounting.alerts import monthly_report_mail
    from accounting.report import month_start
    from slurm_plugins.common.mail import Mailer

    last = month_start(month_start(now or datetime.now(UTC)) - timedelta(days=1))
    with engine.connect() as conn:
        mail = monthly_report_mail(conn, cfg, last)
    if mail is not None:
        Mailer(cfg.smtp).send([mail])


# the price plan, billing account and migration commands live beside this module
from accounting.db_cli import db  # noqa: E402
from accounting.plan_cli import account, plan  # noqa: E402

accounting.add_command(plan)
accounting.add_command(account)
accounting.add_command(db)
