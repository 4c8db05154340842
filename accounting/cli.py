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
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from accounting.edge import db_option as _db
from accounting.edge import lab_option as _lab
from accounting.edge import locale_option as _locale
from accounting.edge import open_engine as _engine
from accounting.edge import site_logo_option as _site_logo
from accounting.edge import site_name_option as _site_name
from accounting.edge import slurm_client as _client

if TYPE_CHECKING:
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


@accounting.command()
@_db
@_lab
@click.option(
    "--samples",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="the node agents' samples directory (<node>.jsonl files)",
)
@click.option("--cluster", help="the Slurm cluster the samples are of (default: Slurm's only one)")
@click.option(
    "--max-gap",
    default=100.0,
    show_default=True,
    type=click.FloatRange(1, 3600),
    help="seconds between two samples beyond which nothing is counted (the agent was down)",
)
def energy(db: str | None, lab: bool, samples: Path, cluster: str | None, max_gap: float) -> None:
    """Add the cards' energy per job from the node agents' power samples (idempotent)."""
    from sqlalchemy.orm import Session

    from accounting.energy import import_energy, kwh, read_power

    if cluster is None:
        names = _client(lab).clusters()
        if len(names) != 1:
            raise click.UsageError(f"Slurm knows {len(names)} clusters: name one with --cluster")
        cluster = names[0]
    with Session(_engine(db)) as session:
        done = import_energy(session, cluster, read_power(samples), max_gap_s=max_gap)
        session.commit()
    click.echo(f"{done.samples} samples of {done.jobs} jobs: {kwh(done.joules)} kWh added")


@accounting.command(name="power-saved")
@_db
@_lab
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="the elastic nodes' configuration (its event log and idle watts; docs/elastic.md)",
)
@click.option("--cluster", help="the Slurm cluster the nodes are of (default: Slurm's only one)")
def power_saved(db: str | None, lab: bool, config_path: Path, cluster: str | None) -> None:
    """Record the elastic nodes' powered-down spans from their event log (idempotent) and
    print the energy they saved in the last 30 days."""
    import time

    from sqlalchemy.orm import Session

    from accounting.power import import_power_off, saved_kwh
    from plumbing.cli import load_or_exit
    from slurm_plugins.power.config import load_config
    from slurm_plugins.power.program import read_events

    cfg = load_or_exit(load_config, config_path)
    if cfg.events is None:
        raise click.UsageError(f"{config_path}: no events: file is configured")
    if cluster is None:
        names = _client(lab).clusters()
        if len(names) != 1:
            raise click.UsageError(f"Slurm knows {len(names)} clusters: name one with --cluster")
        cluster = names[0]
    engine = _engine(db)
    with Session(engine) as session:
        done = import_power_off(session, cluster, read_events(cfg.events), cfg.watts)
        session.commit()
    now = time.time()
    with engine.connect() as conn:
        saved = saved_kwh(conn, now - 30 * 86400, now, cluster=cluster)
    click.echo(
        f"{done.added} spans added, {done.closed} closed; "
        f"{sum(saved.values())} kWh saved in 30 days"
    )


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
@_locale
@_site_name
@_site_logo
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
    locale: str,
    site_name: str,
    site_logo: Path | None,
) -> None:
    """Usage over a period by domain, project, user, GPU type or pool; CSV, XLSX, PDF, JSON.

    Pool utilisation needs the cards per pool: from the lab (--lab) or --capacity. Headers,
    sheets and the PDF are in --locale (zh_CN or en), headed by the site's name and logo.
    """
    from accounting import export
    from accounting.report import Dim, ReportError, build

    t0, t1 = _period(month, start, end)
    pools = _pools(capacity) if capacity else None
    if lab and pools is None:
        from accounting.report import capacity as pool_capacity

        pools = pool_capacity(_client(True).nodes())
    where = {d: v for d, v in ((Dim.DOMAIN, domain), (Dim.PROJECT, project)) if v}
    try:
        with _engine(db).connect() as conn:
            rep = build(conn, t0, t1, Dim(by), where=where, pools=pools)
    except ReportError as exc:
        raise click.UsageError(str(exc)) from exc
    if fmt == "json":
        data = _json(rep)
    elif fmt == "csv" and not output:
        data = export.to_csv(rep, locale).encode()  # a terminal or a pipe: no byte order mark
    else:
        try:
            data = export.render(rep, fmt, locale=locale, brand=export.Brand(site_name, site_logo))
        except export.ExportError as exc:
            raise click.ClickException(str(exc)) from exc
    if output:
        output.write_bytes(data)
        click.echo(f"wrote {output} ({len(data)} bytes)", err=True)
    elif fmt in ("csv", "json"):
        click.echo(data.decode(), nl=False)
    else:
        raise click.UsageError(f"--format {fmt} needs --output FILE")


def _period(month: str | None, start: str | None, end: str | None) -> tuple[datetime, datetime]:
    from accounting.report import ReportError, parse_month

    if month and (start or end):
        raise click.UsageError("give either --month or --from/--to")
    if month:
        try:
            return parse_month(month)
        except ReportError as exc:
            raise click.UsageError(str(exc)) from exc
    a, b = _when(start, "--from"), _when(end, "--to")
    if a is None or b is None:
        raise click.UsageError("give --month, or both --from and --to")
    return a, b


def _pools(text: str) -> dict[str, tuple[int, int]]:
    try:
        raw = json.loads(text)
        return {str(k): (int(v[0]), int(v[1])) for k, v in raw.items()}
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        raise click.UsageError(f'--capacity must look like {{"gpu": [8, 0]}}: {exc}') from exc


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


# the alert, scheduler, price plan, billing account and migration commands live beside this
# module
from accounting.alert_cli import alert_cycle, alerts, run  # noqa: E402
from accounting.db_cli import db  # noqa: E402
from accounting.plan_cli import account, plan  # noqa: E402

accounting.add_command(alerts)
accounting.add_command(run)
accounting.add_command(plan)
accounting.add_command(account)
accounting.add_command(db)

__all__ = ["accounting", "alert_cycle"]
