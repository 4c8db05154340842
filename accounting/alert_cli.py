"""``aipool accounting alerts`` and ``aipool accounting run``: alert rules (usage, pools,
metrics) to e-mail and webhooks, and the scheduler (imports, alerts, retention, the monthly
report).

Each mail is in its reader's language: the one they chose in the portal (where the portal
shares the database and the ``aipool`` command can read its users, :mod:`accounting.edge`),
else the configuration's ``languages``, else its ``locale``, the site's default.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import click

from accounting.edge import db_option as _db
from accounting.edge import lab_option as _lab
from accounting.edge import open_engine as _engine
from accounting.edge import saved_languages_reader
from accounting.edge import site_logo_option as _site_logo
from accounting.edge import slurm_client as _client

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from accounting.alert_eval import Facts
    from accounting.alert_rules import Rule
    from accounting.alerts import AlertConfig
    from accounting.metrics import AccountingMetrics
    from plumbing.address import Address
    from slurm_plugins.client import SlurmClient

log = logging.getLogger("aipool.accounting")

Languages = Callable[["Engine"], Mapping[str, str]]


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
    languages: Languages | None = None,
    sleep: Callable[[float], None] | None = None,
) -> list[str]:
    """One evaluation of the file's rules and the portal's: usage from the rollups, pools
    from Slurm's nodes and queue, metrics from Prometheus; the users' saved languages read
    afresh each time (they may have changed). A name in both: the file's rule or channel."""
    from collections import Counter

    import httpx
    from sqlalchemy.orm import Session

    from accounting.alert_delivery import Deliverer
    from accounting.alert_eval import Facts, pool_facts, prometheus, run_rules, usage_facts
    from accounting.alert_store import stored
    from accounting.billing import money_left
    from accounting.report import month_start
    from plumbing.mail import Mailer

    now = now or datetime.now(UTC)
    if languages is not None:
        cfg = cfg.with_saved_languages(languages(engine))
    with engine.connect() as conn:
        usage = usage_facts(conn, now)
        db_rules, db_channels = stored(conn)
        with Session(bind=conn) as session:
            balances = money_left(session, now)
    pending = Counter(j.partition for j in client.jobs() if j.is_pending)
    with httpx.Client(timeout=cfg.delivery.timeout_s) as http:
        facts = Facts(
            month_start(now),
            usage,
            pool_facts(client.nodes(), pending),
            prometheus(http, cfg.prometheus_url) if cfg.prometheus_url else None,
            balances,
        )
        names = {r.name for r in cfg.rules}
        rules = [*cfg.rules, *(r for r in db_rules if r.name not in names)]
        if dry_run:
            return _holding(rules, facts)
        taken = {c.name for c in cfg.channels}
        deliver = Deliverer(
            engine,
            [*cfg.channels, *(c for c in db_channels if c.name not in taken)],
            Mailer(cfg.smtp),
            cfg.mail,
            platform_admins=cfg.platform_admins,
            settings=cfg.delivery,
            http=http,
            sleep=sleep or time.sleep,
        )
        return run_rules(engine, rules, facts, deliver, now, site=cfg.mail.site_name)


def _holding(rules: Sequence[Rule], facts: Facts) -> list[str]:
    """What holds now, one line per rule and subject (``--dry-run``)."""
    from accounting.alert_eval import QueryError, observe

    out = []
    for rule in rules:
        try:
            observed = observe(rule, facts)
        except QueryError as exc:
            out.append(f"{rule.name}: {exc}")
            continue
        out += [
            f"{rule.name} {o.subject} = {o.value:g} -> {', '.join(rule.channels)}"
            for o in observed
            if rule.holds(o.value)
        ]
    return out


@click.command()
@_db
@_lab
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="alert configuration (YAML): smtp, recipients, budgets, languages",
)
@click.option("--dry-run", is_flag=True, help="print what holds; send and record nothing")
def alerts(db: str | None, lab: bool, config_path: Path, dry_run: bool) -> None:
    """One evaluation of the alert rules; messages go out once per episode."""
    lines = alert_cycle(
        _engine(db),
        _client(lab),
        _alert_config(config_path),
        dry_run=dry_run,
        languages=saved_languages_reader(),
    )
    for line in lines:
        click.echo(line)


@click.command()
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
@_site_logo
@click.option(
    "--metrics",
    "metrics_at",
    metavar="HOST:PORT",
    callback=lambda _ctx, _param, value: _address(value),
    help="Serve the import lag, imports and card-hours on http://HOST:PORT/metrics "
    "(e.g. 127.0.0.1:9104); off unless given.",
)
@click.option("--cluster", default="default", show_default=True, help="The metrics' cluster label.")
def run(  # noqa: PLR0917 (one parameter per option)
    db: str | None,
    lab: bool,
    every_minutes: int,
    keep_days: int,
    alerts_path: Path | None,
    site_logo: Path | None,
    metrics_at: Address | None,
    cluster: str,
) -> None:
    """The accounting scheduler: import every N minutes, purge daily (APScheduler)."""
    from apscheduler.schedulers.blocking import BlockingScheduler

    from accounting.ingest import import_from_slurm
    from accounting.retention import Retention
    from accounting.retention import purge as run_purge

    engine, client = _engine(db), _client(lab)
    retention = Retention(keep_days, max(keep_days, 400))
    cfg = _alert_config(alerts_path) if alerts_path else None
    # read here, in click's context: the scheduler's jobs run in threads without it
    languages = saved_languages_reader()
    metrics = _serve_metrics(engine, metrics_at, cluster)

    def cycle() -> None:
        if metrics is None:
            import_from_slurm(engine, client, retention=retention)
        else:
            metrics.measure(lambda: import_from_slurm(engine, client, retention=retention))
        if cfg is not None:
            for line in alert_cycle(engine, client, cfg, languages=languages):
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
        sched.add_job(
            lambda: mail_monthly_report(engine, cfg, languages=languages, logo=site_logo),
            "cron",
            day=1,
            hour=5,
            id="report",
        )
    click.echo(f"importing every {every_minutes} min; Ctrl-C stops", err=True)
    try:
        sched.start()
    except (KeyboardInterrupt, SystemExit):
        sys.exit(0)


def _address(value: str | None) -> Address | None:
    from plumbing.address import parse_address

    try:
        return None if value is None else parse_address(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--metrics") from exc


def _serve_metrics(engine: Engine, at: Address | None, cluster: str) -> AccountingMetrics | None:
    """The scheduler's metrics, served at ``at`` (``--metrics``); None without it. An
    address that cannot be bound stops the command with 2."""
    from accounting.metrics import AccountingMetrics
    from plumbing.metrics import serve

    if at is None:
        return None
    metrics = AccountingMetrics(engine, cluster)
    try:
        serve(metrics.registry, at)
    except OSError as exc:  # the port is taken, the address is not this host's
        raise click.BadParameter(f"{at}: {exc}", param_hint="--metrics") from exc
    return metrics


def mail_monthly_report(
    engine: Engine,
    cfg: AlertConfig,
    now: datetime | None = None,
    *,
    languages: Languages | None = None,
    logo: Path | None = None,
) -> None:
    """Mail last month's report as PDF to ``monthly_report.recipients``, each in their
    language."""
    from accounting.alerts import monthly_report_mails
    from accounting.report import month_start
    from accounting.table import Brand
    from plumbing.mail import Mailer

    if languages is not None:
        cfg = cfg.with_saved_languages(languages(engine))
    last = month_start(month_start(now or datetime.now(UTC)) - timedelta(days=1))
    with engine.connect() as conn:
        mails = monthly_report_mails(conn, cfg, last, Brand(cfg.mail.site_name, logo))
    Mailer(cfg.smtp).send(mails)
