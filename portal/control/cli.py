"""``aipool reconcile``: the portal's control daemon (:mod:`portal.control.daemon`)."""

from __future__ import annotations

import signal
import threading
from datetime import UTC, datetime
from types import FrameType
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from flask import Flask


def _stamped(line: str) -> None:
    click.echo(f"{datetime.now(UTC):%Y-%m-%d %H:%M:%S} {line}")


def _slurm_check(app: Flask, *, sync: bool) -> None:
    """Print the drift between memberships and associations; apply it when ``sync``."""
    from portal.quotas.slurmsync import reconcile
    from portal.slurm import slurm
    from portal.web import session

    with app.app_context():
        report = reconcile(session(), slurm(), sync=sync)
    for line in report.lines():
        click.echo(line)
    for command in report.commands:
        click.echo(f"  {command}")
    if report.plan.empty:
        click.echo("Slurm's associations match the portal's memberships")
    elif not report.applied:
        click.echo(f"{len(report.lines())} difference(s); --sync applies them")
    else:
        click.echo(f"{len(report.lines())} difference(s) repaired and audited")


@click.command("reconcile")
@click.option("--lab", is_flag=True, help="use the lab cluster's Slurm (aipool lab up)")
@click.option("--once", is_flag=True, help="one full pass, then exit")
@click.option("--dry-run", is_flag=True, help="print what a pass would do; change nothing")
@click.option(
    "--every",
    "every_s",
    type=click.FloatRange(1, 3600),
    default=20.0,
    show_default=True,
    help="seconds between full passes (every service's replica jobs read from Slurm)",
)
@click.option(
    "--poll",
    "poll_s",
    type=click.FloatRange(0.2, 60),
    default=2.0,
    show_default=True,
    help="seconds between looks at the database for what changed or is in progress",
)
@click.option(
    "--sample-every",
    "sample_s",
    type=click.FloatRange(5, 3600),
    default=None,
    help="seconds between capacity samples for the charts  [default: SAMPLE_EVERY_S, 60]",
)
@click.option(
    "--slurm-check",
    is_flag=True,
    help="only compare the portal's memberships with Slurm's associations and print the "
    "difference both ways; change nothing unless --sync",
)
@click.option("--sync", is_flag=True, help="with --slurm-check: apply the difference, audited")
def command(
    *,
    lab: bool,
    once: bool,
    dry_run: bool,
    every_s: float,
    poll_s: float,
    sample_s: float | None,
    slurm_check: bool,
    sync: bool,
) -> None:
    """Keep inference services, registry runs and Slurm's associations in line with the portal
    (until SIGTERM): start, restart and stop replica jobs, expire and remove services, record
    finished runs, add and remove members' associations; sample the clusters' capacity and
    queues for the monitoring charts."""
    from portal import create_app
    from portal.cli import lab_settings
    from portal.control.daemon import Daemon

    if sync and not slurm_check:
        raise click.UsageError("--sync goes with --slurm-check")
    app = create_app(lab_settings() if lab else {})
    if slurm_check:
        _slurm_check(app, sync=sync and not dry_run)
        return
    daemon = Daemon(
        app, every_s=every_s, poll_s=poll_s, dry_run=dry_run, echo=_stamped, sample_every_s=sample_s
    )
    if once or dry_run:
        for line in daemon.sample_pass():
            click.echo(line)
        for line in daemon.slurm_pass():
            click.echo(line)
        report = daemon.run_pass(full=True)
        if not report.ran:
            raise click.ClickException("another reconciler is running a pass; try again")
        for line in report.lines:
            click.echo(line)
        click.echo(
            f"{report.services} service(s), {report.runs} run(s) in progress; "
            f"{len(report.lines)} step(s){' planned' if dry_run else ''}"
        )
        return
    stop = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    _stamped(
        f"reconciling: full pass every {every_s:g} s, changes looked for every {poll_s:g} s, "
        f"capacity sampled every {daemon.sample_interval:g} s"
    )
    daemon.run_forever(stop)
